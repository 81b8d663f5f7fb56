package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Defaults of DumpOptions and RestoreOptions.
const (
	DefaultTimeout = 2 * time.Minute
	DefaultGrace   = 2 * time.Second
)

// InfoName is the file Dump writes into the image directory: the dump's
// Result as JSON. It travels with the image, so the shadow can read the
// job's inputs and the dump's statistics from a stored image.
const InfoName = "harrier-dump.json"

// Errors of the watchdog. ErrStuck comes with ErrTimeout (or the
// context's error): CRIU was killed but has not exited, typically
// because it is closing a file on a FUSE mount whose server does not
// answer; the container is locked until it does, and its methods block.
var (
	ErrTimeout = errors.New("criu did not finish in time")
	ErrStuck   = errors.New("criu does not exit")
)

// DumpOptions say where and how to dump a container.
type DumpOptions struct {
	// ImageDir receives the image; it must not exist and is made
	// owner-only (0700).
	ImageDir string
	// WorkDir receives CRIU's log and statistics; default ImageDir with
	// ".work" appended. It is kept apart so that it does not travel with
	// the image.
	WorkDir string
	// LeaveRunning keeps the job running after the dump (a periodic
	// checkpoint); otherwise CRIU kills it once it is saved (a vacate).
	LeaveRunning bool
	// Timeout bounds the whole dump (default DefaultTimeout). When it
	// passes, CRIU is killed and the job is thawed: it keeps running.
	Timeout time.Duration
	// Grace is how long Dump waits for CRIU to go once killed, and again
	// after aborting FUSE connections (default DefaultGrace).
	Grace time.Duration
	// AbortFUSE lists host mount points of FUSE file systems the job
	// uses. If CRIU is stuck in one of them even after SIGKILL (a killed
	// CRIU still closes the job's files it opened there, and waits for
	// the server to answer), Dump aborts their connections through
	// fusectl: the job goes on running, but every access to those mounts
	// fails from then on. Empty: never abort; Dump then returns with
	// ErrStuck and CRIU exits whenever the server answers.
	AbortFUSE []string
	// LoopbackOnly says the job's network namespace holds nothing but
	// the loopback interface (as the sandbox makes it), so CRIU need not
	// dump it: that saves CRIU's ip and iptables runs, 150 ms or more of
	// frozen time. Restore then gives the job a fresh namespace with the
	// loopback up (it reads this choice from the image). A job that
	// holds internet sockets (TCP listening or connected, UDP, raw) has
	// its namespace dumped all the same (Result.LoopbackOnly says which
	// it was): CRIU binds and reconnects a socket as it restores it,
	// before Restore could bring a fresh loopback up, so the namespace
	// must come back with its addresses.
	LoopbackOnly bool
	// Parent is the image directory of a pre-dump this dump builds on
	// (see PreDump), relative to ImageDir or absolute; empty for a full
	// dump. CRIU records it as the image's "parent" link, as given: only
	// a relative one that stays inside the image travels with Pack.
	Parent string
	// Input is the job's standard input when it is a file opened outside
	// its container and handed to it (HTCondor's input), the very open
	// file the job has, which CRIU is told is external; nil when the job
	// has none. The container must carry ConfigFileLabel.
	Input  *os.File
	Logger *slog.Logger // default slog.Default()
}

func (o DumpOptions) withDefaults() (DumpOptions, error) {
	if o.ImageDir == "" {
		return o, errors.New("no image directory")
	}
	if o.WorkDir == "" {
		o.WorkDir = filepath.Clean(o.ImageDir) + ".work"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Result is what a dump produced, besides the image.
type Result struct {
	// Stats are CRIU's own figures from stats-dump.
	Stats DumpStats `json:"stats"`
	// Inputs are the regular files the job held open or mapped whose
	// size CRIU checks at restore (see CheckInputs).
	Inputs []Input `json:"inputs"`
	// Wall is the time Dump took, CRIU's start-up included.
	Wall time.Duration `json:"wall"`
	// Time is when the dump finished.
	Time time.Time `json:"time"`
	// LoopbackOnly says the image holds no network namespace (see
	// DumpOptions.LoopbackOnly).
	LoopbackOnly bool `json:"loopback_only,omitempty"`
	// PreDumps are the pre-dumps the image builds on (see DumpPreCopy),
	// oldest first; none for a full dump.
	PreDumps []PreDumpStats `json:"pre_dumps,omitempty"`
	// Input is CRIU's name of the job's input file (DumpOptions.Input)
	// in the image, file[mount:inode] on the machine of the dump: Restore
	// needs the file handed back (RestoreOptions.Input).
	Input string `json:"input,omitempty"`
	// Stopped are the pids, in the job's namespace, of its processes
	// that were stopped: Restore stops them again (see stopped.go).
	Stopped []int `json:"stopped,omitempty"`
}

// PreDumpStats are the figures of one pre-dump.
type PreDumpStats struct {
	Stats DumpStats     `json:"stats"`
	Wall  time.Duration `json:"wall"`
}

// Dump checkpoints the running container c into opts.ImageDir. Unless
// opts.LeaveRunning is set the job is gone when Dump returns nil; the
// caller still waits for its init process and destroys c. On an error
// the job is left running: an error wrapping ErrTimeout says the
// watchdog killed CRIU and thawed the job, one also wrapping ErrStuck
// that CRIU has not exited yet (see ErrStuck), one wrapping ErrRlimits
// that this machine's CRIU cannot dump a job of another user.
func Dump(ctx context.Context, c *libcontainer.Container, opts DumpOptions) (*Result, error) {
	res, err := dump(ctx, c, opts, false)
	if !errors.Is(err, errUnseizable) || ctx.Err() != nil {
		return res, err
	}
	// CRIU thawed the job and left it running; its next freeze finds the
	// process elsewhere. Once more, from an empty image directory.
	opts, _ = opts.withDefaults()
	opts.Logger.Warn("dump found a process it could not seize; trying once more", "container", c.ID(), "err", err)
	if rerr := os.RemoveAll(opts.ImageDir); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	_ = os.Remove(filepath.Join(opts.WorkDir, "dump.log"))
	return dump(ctx, c, opts, false)
}

func dump(ctx context.Context, c *libcontainer.Container, opts DumpOptions, pre bool) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	if err := os.Mkdir(opts.ImageDir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	if err := os.MkdirAll(opts.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	// Before CRIU runs: the container's lock stays taken while CRIU
	// does, and a stuck CRIU must not keep us from thawing the job.
	freezer, err := freezerFile(c)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	input, err := dumpConfig(c, opts.Input)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	// The job's stopped processes, which the dump continues (see
	// stopped.go); fn may outlive w.run.
	continued := make(chan []stoppedProcess, 1)
	start := time.Now()
	loopbackOnly := opts.LoopbackOnly
	frozen := frozenHook(ctx)
	w := watchdog{
		workDir: opts.WorkDir, log: "dump.log",
		timeout: opts.Timeout, grace: opts.Grace,
		abortFUSE: opts.AbortFUSE, logger: opts.Logger.With("container", c.ID()),
	}
	err = w.run(ctx, func(ctx context.Context) error {
		// Freezing the job ourselves spares CRIU's first freezer poll,
		// a fixed 100 ms of downtime, and keeps CRIU from meeting a
		// process it cannot seize.
		paused, stopped, err := freezeForDump(ctx, c)
		continued <- stopped
		if err != nil {
			return err
		}
		if frozen != nil && paused && !pre {
			frozen()
		}
		// Frozen, the job opens no socket before CRIU looks.
		inet, tcp, err := inetSockets(c)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			if paused {
				err = errors.Join(err, thaw(freezer))
			}
			return err
		}
		loopbackOnly = loopbackOnly && !inet
		err = c.Checkpoint(&libcontainer.CriuOpts{
			ImagesDirectory: opts.ImageDir,
			WorkDirectory:   opts.WorkDir,
			LeaveRunning:    opts.LeaveRunning,
			ParentImage:     opts.Parent,
			PreDump:         pre,
			EmptyNs:         emptyNs(loopbackOnly),
			TcpEstablished:  tcp,
			// Locks the job holds (flock, fcntl: HDF5, SQLite, lock
			// files) are its own: nothing outside its container shares
			// the files they are on, and CRIU refuses a job holding one
			// unless told to save them.
			FileLocks: true,
		})
		if paused {
			// CRIU leaves a cgroup it found frozen frozen, whether the
			// job goes on or has been killed.
			err = errors.Join(err, thaw(freezer))
		}
		return err
	})
	var stopped []stoppedProcess
	select {
	case stopped = <-continued:
		defer closeStopped(stopped)
	default:
	}
	if err != nil {
		if w.fired {
			if terr := thaw(freezer); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		err = criuFailure(opts.WorkDir, "dump.log", err)
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), errors.Join(err, stopAgain(stopped)))
	}
	if opts.LeaveRunning || pre {
		if err := stopAgain(stopped); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
		}
	}
	res := &Result{Wall: time.Since(start), Time: time.Now(), LoopbackOnly: loopbackOnly, Input: input}
	for _, p := range stopped {
		res.Stopped = append(res.Stopped, p.ns)
	}
	if res.Stats, err = readDumpStats(opts.WorkDir); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	// A pre-dump holds memory only, no files.img: the final dump's
	// files are the ones a restore checks.
	if !pre {
		if res.Inputs, err = readInputs(opts.ImageDir); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
		}
	}
	if err := writeInfo(opts.ImageDir, res); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	if err := ownerOnly(opts.ImageDir); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	return res, nil
}

// writeInfo stores res as InfoName in dir, owner-only.
func writeInfo(dir string, res *Result) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, InfoName), b, 0o600)
}

// ownerOnly makes the files CRIU wrote in dir readable by their owner
// alone: an image holds the job's memory.
func ownerOnly(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := os.Chmod(filepath.Join(dir, e.Name()), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadInfo reads the Result a dump left in the image directory dir.
func ReadInfo(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, InfoName))
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", InfoName, err)
	}
	return &res, nil
}

// freezerFile is the file that freezes and thaws c's cgroup.
func freezerFile(c *libcontainer.Container) (string, error) {
	st, err := c.State()
	if err != nil {
		return "", err
	}
	if p := st.CgroupPaths["freezer"]; p != "" {
		return filepath.Join(p, "freezer.state"), nil
	}
	if p := st.CgroupPaths[""]; p != "" { // unified hierarchy
		return filepath.Join(p, "cgroup.freeze"), nil
	}
	return "", errors.New("no freezer cgroup")
}

// thaw undoes what a killed CRIU leaves behind: a frozen (or
// half-frozen) cgroup. CRIU's ptrace hold ends by itself when CRIU dies.
// A cgroup that is gone, or going (the kernel refuses writes to a
// removed cgroup's files with ENODEV), has nothing to thaw: the job CRIU
// killed after its dump (a vacate) has exited, and its container may be
// removed before Dump gets here.
func thaw(freezer string) error {
	v := "THAWED"
	if filepath.Base(freezer) == "cgroup.freeze" {
		v = "0"
	}
	err := os.WriteFile(freezer, []byte(v), 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("thaw: %w", err)
	}
	return nil
}

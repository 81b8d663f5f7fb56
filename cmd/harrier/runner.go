package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/sys/unix"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/imagecache"
	"harrier.dev/harrier/sandbox"
	"harrier.dev/harrier/starter"
)

// chooseRunner returns the runner the startd chose for the job: a
// container per job, or a plain process where containers are not
// available. A container runner that cannot be set up fails each job's
// start with the reason, so that the job goes on hold and says why.
// With no mode in the spec, it makes the startd's automatic choice:
// containers where they work.
func chooseRunner(spec *starter.Spec, logger *slog.Logger) starter.Runner {
	switch spec.Sandbox {
	case "container":
	case "":
		if sandbox.Available() != nil {
			spec.Sandbox = "process"
			return processRunner(spec)
		}
		// The starter's other choices (the job's directory through iofs)
		// follow the one made here.
		spec.Sandbox = "container"
	default:
		return processRunner(spec)
	}
	// The scratch directory is in the startd's execute directory.
	root := sandbox.StateRoot(filepath.Dir(spec.ScratchDir))
	slot, _, _ := strings.Cut(spec.Slot, "@")
	policy, err := sandbox.ReadPolicy(root)
	if err != nil {
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return failingRunner{fmt.Errorf("Cannot run jobs in containers on this machine: %w", err)}
	}
	r, err := sandbox.NewRunner(sandbox.Config{StateRoot: root, Slot: slot, Policy: policy, Logger: logger})
	if err != nil {
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return failingRunner{fmt.Errorf("Cannot run jobs in containers on this machine: %w", err)}
	}
	cacheMB := policy.ImageCacheMB
	if cacheMB == 0 {
		cacheMB = defaultImageCacheMB
	}
	return containerRunner{r: r, images: imagecache.InExecuteDir(filepath.Dir(spec.ScratchDir)), imagesMB: max(cacheMB, 0),
		registryCA: policy.ImageRegistryCA, log: logger}
}

// processRunner runs jobs as plain processes: as the slot's user
// (SLOT<N>_USER, or SLOT_USER, default nobody) when the starter is
// root, as for containers, each kept in a cgroup of the slot's where
// the machine has cgroup v2; else as the starter's own user, who
// started the pool.
func processRunner(spec *starter.Spec) starter.Runner {
	exe, err := os.Executable()
	if err != nil {
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return failingRunner{fmt.Errorf("Cannot run jobs on this machine: %w", err)}
	}
	withLimits := []string{exe, "exec-with-limits"}
	if os.Geteuid() != 0 {
		return starter.ProcessRunner{WithLimits: withLimits}
	}
	policy, err := sandbox.ReadPolicy(sandbox.StateRoot(filepath.Dir(spec.ScratchDir)))
	if err == nil {
		var uid, gid int
		slot, _, _ := strings.Cut(spec.Slot, "@")
		if uid, gid, err = sandbox.SlotUser(policy, slot); err == nil {
			r := starter.ProcessRunner{User: &asuser.Credential{UID: uint32(uid), GID: uint32(gid), Groups: []uint32{}}, WithLimits: withLimits}
			if cgroups, err := sandbox.NewProcessCgroups(sandbox.StateRoot(filepath.Dir(spec.ScratchDir)), slot); err == nil {
				r.Track = func() (starter.ProcessTracker, error) { return cgroups.Open() }
			}
			return r
		}
	}
	//lint:ignore ST1005 a hold reason, written as HTCondor writes it
	return failingRunner{fmt.Errorf("Cannot run jobs on this machine: %w", err)}
}

// defaultImageCacheMB is IMAGE_CACHE_MB's default.
const defaultImageCacheMB = 10240

// failingRunner refuses every job with the same error.
type failingRunner struct{ err error }

func (f failingRunner) Start(context.Context, *starter.Task) (starter.Job, error) { return nil, f.err }

// containerRunner adapts sandbox.Runner to starter.Runner. images is
// the machine's image cache directory, opened when a job names an image.
type containerRunner struct {
	r        *sandbox.Runner
	images   string
	imagesMB int64
	// registryCA names the certificate authorities trusted for
	// registries besides the system's (IMAGE_REGISTRY_CA).
	registryCA string
	log        *slog.Logger
}

// Image makes a job's container image ready in the machine's cache.
func (c containerRunner) Image(ctx context.Context, ref string, creds *starter.RegistryCredentials) (*starter.Image, error) {
	cache, err := imagecache.New(c.images, c.imagesMB<<20, c.log)
	if err != nil {
		return nil, err
	}
	reg := imagecache.Registries{CAFile: c.registryCA}
	if creds != nil {
		reg.Auth = &authn.AuthConfig{Username: creds.Username, Password: creds.Password, Auth: creds.Auth,
			IdentityToken: creds.IdentityToken, RegistryToken: creds.RegistryToken}
	}
	img, err := imagecache.Open(ctx, ref, reg)
	if err != nil {
		return nil, err
	}
	im, err := cache.Acquire(ctx, img, ref)
	if err != nil {
		return nil, err
	}
	return &starter.Image{ID: im.ID, Digest: im.Digest, Layers: im.Layers, Env: im.Config.Env, Unpacked: im.Unpacked, Release: im.Release}, nil
}

func (c containerRunner) Start(ctx context.Context, t *starter.Task) (starter.Job, error) {
	j, err := c.r.Start(ctx, sandboxTask(t))
	if err != nil {
		return nil, err
	}
	return containerJob{j}, nil
}

// Restore brings back a checkpointed job in a new container.
func (c containerRunner) Restore(ctx context.Context, t *starter.Task, imageDir string) (starter.Job, error) {
	j, res, err := c.r.Restore(ctx, sandboxTask(t), imageDir)
	if err != nil {
		return nil, err
	}
	return restoredJob{containerJob{j}, res.Stats.Restore}, nil
}

// restoredJob is a container job restored from a checkpoint.
type restoredJob struct {
	containerJob
	restore time.Duration
}

// RestoreTime is CRIU's restore time of the job.
func (r restoredJob) RestoreTime() time.Duration { return r.restore }

func sandboxTask(t *starter.Task) *sandbox.Task {
	var rlimits []sandbox.Rlimit
	for _, l := range t.Rlimits {
		rlimits = append(rlimits, sandbox.Rlimit{Resource: l.Resource, Limit: l.Limit})
	}
	return &sandbox.Task{
		ID: t.ID, Path: t.Path, Args: t.Args, Env: t.Env, Dir: t.Dir, ScratchDir: t.ScratchDir, DirSource: t.DirSource, InScratch: t.InScratch,
		Stdin: t.Stdin, Stdout: t.Stdout, Stderr: t.Stderr,
		Cpus: t.Cpus, MemoryMB: t.MemoryMB, DiskKB: t.DiskKB, ScratchLimitKB: t.ScratchLimitKB, MachineCpus: t.MachineCpus, Cpuset: t.Cpuset,
		ImageLayers: t.ImageLayers, Devices: t.Devices, Rlimits: rlimits,
	}
}

// JobScratchDir is where the container's job sees its scratch directory.
func (c containerRunner) JobScratchDir() string { return sandbox.JobScratchDir }

// KeptInScratch is the directory of a job's image root in its scratch
// directory, which a container checkpoint carries on its own.
func (c containerRunner) KeptInScratch() []string { return []string{sandbox.ImageRootDir} }

// JobUser is the slot user the container's job runs as.
func (c containerRunner) JobUser() (uid, gid int) { return c.r.User() }

// Checkpoint dumps the job with CRIU.
func (c containerJob) Checkpoint(ctx context.Context, imageDir string, leaveRunning bool) (starter.CheckpointStats, error) {
	res, err := c.j.Checkpoint(ctx, checkpoint.DumpOptions{ImageDir: imageDir, LeaveRunning: leaveRunning})
	if err != nil {
		return starter.CheckpointStats{}, err
	}
	st := starter.CheckpointStats{Frozen: res.Stats.Frozen, Dump: res.Wall, PreDumps: len(res.PreDumps)}
	for _, p := range res.PreDumps {
		st.PreDump += p.Wall
	}
	// The pre-dumps of a pre-copy image are in its subdirectories. The
	// size is a figure for the job ad: what cannot be read is left out.
	_ = filepath.WalkDir(imageDir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, ierr := e.Info(); ierr == nil {
				st.ImageBytes += info.Size()
			}
		}
		return nil
	})
	return st, nil
}

// containerJob adapts *sandbox.Job to starter.Job.
type containerJob struct{ j *sandbox.Job }

func (c containerJob) Pid() int                     { return c.j.Pid() }
func (c containerJob) Signal(sig unix.Signal) error { return c.j.Signal(sig) }
func (c containerJob) Suspend() error               { return c.j.Suspend() }
func (c containerJob) Continue() error              { return c.j.Continue() }

func (c containerJob) Wait() (starter.Exit, error) {
	x, err := c.j.Wait()
	return starter.Exit{Code: x.Code, Signal: x.Signal, Usage: starterUsage(x.Usage),
		HoldReason: x.HoldReason, HoldCode: x.HoldCode}, err
}

func (c containerJob) Usage() (starter.Usage, error) {
	u, err := c.j.Usage()
	return starterUsage(u), err
}

func starterUsage(u sandbox.Usage) starter.Usage {
	return starter.Usage{UserCPU: u.UserCPU, SysCPU: u.SysCPU, MaxRSSBytes: u.MaxRSSBytes, MemoryBytes: u.MemoryBytes}
}

// writeSandboxPolicy saves the administrator's sandbox settings where the
// startd's starters read them:
//
//	SLOT_USER           the user jobs run as (default nobody)
//	SLOT<N>_USER        the user slot N's plain-process jobs run as
//	                    instead; a dynamic slot N_M's SLOT<N>_<M>_USER,
//	                    else N's
//	ALLOW_ROOT_JOBS     whether a slot user may be root (default false)
//	SLOT_PIDS_LIMIT     processes and threads per job (default 1024)
//	CPU_HARD_LIMIT      a CPU quota of request_cpus on top of shares (default false)
//	DISK_LIMIT_FACTOR   hold a job whose scratch holds more than this times
//	                    the request_disk its submit file gives (default 2;
//	                    negative: never)
//	DISK_CHECK_INTERVAL seconds between measures of a job's scratch
//	                    directory (default 30)
//	IMAGE_CACHE_MB      cap of the container images no running job uses,
//	                    in MiB (default 10240; negative: no cap)
//	IMAGE_REGISTRY_CA   a PEM file of certificate authorities trusted for
//	                    image registries besides the system's
func writeSandboxPolicy(pc *poolConfig, executeDir string) error {
	allowRoot, err1 := pc.c.Bool("ALLOW_ROOT_JOBS", false)
	pids, err2 := pc.c.Int("SLOT_PIDS_LIMIT", 0)
	quota, err3 := pc.c.Bool("CPU_HARD_LIMIT", false)
	var (
		factor float64
		err4   error
	)
	if v := pc.c.String("DISK_LIMIT_FACTOR", ""); v != "" {
		if factor, err4 = strconv.ParseFloat(v, 64); err4 != nil {
			err4 = fmt.Errorf("DISK_LIMIT_FACTOR %q: not a number", v)
		}
	}
	diskInterval, err5 := pc.c.Duration("DISK_CHECK_INTERVAL", 0)
	imageMB, err6 := pc.c.Int("IMAGE_CACHE_MB", 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return fmt.Errorf("sandbox policy: %w", err)
	}
	p := sandbox.Policy{
		User: pc.c.String("SLOT_USER", ""), SlotUsers: slotUsers(pc), AllowRoot: allowRoot, PidsLimit: pids,
		CPUQuota: quota, DiskFactor: factor, DiskInterval: diskInterval, ImageCacheMB: int64(imageMB),
		ImageRegistryCA: pc.c.String("IMAGE_REGISTRY_CA", ""),
	}
	if os.Geteuid() == 0 {
		// Only a root startd's jobs run as slot users: a user that
		// does not exist, or root where root is not allowed, stops
		// the startd rather than hold every job of the slot.
		if err := p.CheckUsers(); err != nil {
			return fmt.Errorf("sandbox policy: %w", err)
		}
	}
	return sandbox.WritePolicy(sandbox.StateRoot(executeDir), p)
}

// slotUserKey is SLOT<N>_USER and SLOT<N>_<M>_USER: the slot's short
// name, lower case, is the middle.
var slotUserKey = regexp.MustCompile(`(?i)^(SLOT[0-9]+(?:_[0-9]+)?)_USER$`)

// slotUsers reads the SLOT<N>_USER settings, by short slot name.
func slotUsers(pc *poolConfig) map[string]string {
	var users map[string]string
	for _, k := range pc.c.Keys() {
		m := slotUserKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		if v := pc.c.String(k, ""); v != "" {
			if users == nil {
				users = map[string]string{}
			}
			users[strings.ToLower(m[1])] = v
		}
	}
	return users
}

// installContainerInit makes the small init binary the first process of
// this machine's containers (sandbox.InstallInit): CONTAINER_INIT names
// it, by default harrier-init beside the harrier binary. Without it
// containers start with the harrier binary, as libcontainer does, at
// about 5 ms more of processor time a job. An init the administrator
// named that cannot be installed stops the startd; the default one only
// gets a warning.
func installContainerInit(pc *poolConfig, logger *slog.Logger) error {
	if os.Geteuid() != 0 {
		return nil // no containers without root
	}
	path := pc.c.String("CONTAINER_INIT", "")
	named := path != ""
	if !named {
		exe, err := os.Executable()
		if err != nil {
			return nil
		}
		path = filepath.Join(filepath.Dir(exe), "harrier-init")
		if _, err := os.Stat(path); err != nil {
			logger.Info("no harrier-init beside harrier: containers start with the harrier binary", "path", path)
			return nil
		}
	}
	if err := sandbox.InstallInit(path); err != nil {
		if named {
			return fmt.Errorf("CONTAINER_INIT: %w", err)
		}
		logger.Warn("containers start with the harrier binary", "err", err)
		return nil
	}
	logger.Info("container init installed", "from", path, "at", sandbox.InitPath())
	return nil
}

// Exec starts a process in the job's container for its owner.
func (c containerJob) Exec(_ context.Context, e *starter.ExecTask) (starter.Process, error) {
	p, err := c.j.Exec(&sandbox.Exec{Args: e.Args, Env: e.Env, TTY: e.TTY, Rows: e.Rows, Cols: e.Cols,
		Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr})
	if err != nil {
		return nil, err
	}
	return containerProcess{p}, nil
}

// containerProcess adapts *sandbox.Process to starter.Process.
type containerProcess struct{ p *sandbox.Process }

func (c containerProcess) Console() *os.File              { return c.p.Console() }
func (c containerProcess) Resize(rows, cols uint16) error { return c.p.Resize(rows, cols) }
func (c containerProcess) Kill() error                    { return c.p.Kill() }

func (c containerProcess) Wait() (starter.ProcessExit, error) {
	code, sig, ending, err := c.p.Wait()
	return starter.ProcessExit{Code: code, Signal: sig, JobEnding: ending}, err
}

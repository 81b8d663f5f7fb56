package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/checkpoint"
)

// Runner starts the jobs of one slot, each in its own container.
type Runner struct {
	cfg  Config
	user identity
	log  *slog.Logger

	// slotMade is set once the slot cgroup exists. Jobs remove only their
	// own cgroups, so it stays for the Runner's next jobs; Cleanup removes
	// it, and must not be called for the slot while its Runner is in use.
	slotMade atomic.Bool

	// probe asks CRIU once, at the first checkpoint, which optional
	// features (pre-copy) this machine has; features is its answer.
	probe    sync.Once
	features checkpoint.Features

	mu   sync.Mutex
	kept *imageRoot // an untouched image root kept for the next job (see keepRoot)
}

// checkpointFeatures are CRIU's optional features here, probed once. A
// probe that fails counts as no features: checkpoints are full dumps, as
// they are where the kernel lacks them.
func (r *Runner) checkpointFeatures(ctx context.Context) checkpoint.Features {
	r.probe.Do(func() {
		f, err := checkpoint.Probe(ctx)
		if err != nil {
			r.log.Warn("cannot probe CRIU's features; checkpoints are full dumps", "err", err)
		}
		r.log.Info("CRIU features", "pre_copy", f.PreCopy)
		r.features = f
	})
	return r.features
}

// NewRunner checks cfg and returns a Runner. It touches no cgroup or file
// until a job starts.
func NewRunner(cfg Config) (*Runner, error) {
	cfg, id, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, user: id, log: cfg.Logger.With("slot", cfg.Slot)}, nil
}

// Start creates the job's container and starts the job in it. A task that
// cannot start (missing or non-executable program, bad working directory,
// a limit that cannot be met) gives an error whose message is meant for
// the job's owner; nothing of the job is left behind then.
func (r *Runner) Start(ctx context.Context, t *Task) (_ *Job, retErr error) {
	s, cfg, err := r.prepare(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.release()
		}
	}()
	root := containersDir(r.cfg.StateRoot, r.cfg.Slot)
	c, err := libcontainer.Create(root, s.id, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", s.id, err)
	}
	defer func() {
		if retErr != nil {
			_ = c.Destroy()
		}
	}()
	p := r.process(t, s)
	if err := c.Run(p); err != nil {
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return nil, fmt.Errorf("Failed to execute '%s': %w", t.Path, err)
	}
	j := newJob(r, c, p, t, s.root)
	r.log.Debug("job started in container", "container", s.id, "pid", j.pid)
	return j, nil
}

// prepare checks the task and readies everything its container needs but
// the container itself: the scratch directory's owner, the slot cgroup,
// the root file system skeleton. A leftover container of the same name is
// removed.
//
// A job in its own image gets its root's directory (see
// makeImageRootDir) made afresh, unless rootDir is given: one a restore
// has put its root back in, which prepare closes.
func (r *Runner) prepare(ctx context.Context, t *Task, rootDir *os.File) (spec, *configs.Config, error) {
	if rootDir != nil {
		defer rootDir.Close()
	}
	if err := ctx.Err(); err != nil {
		return spec{}, nil, err
	}
	if t.ScratchDir != "" && r.user.uid != 0 {
		// The job's files, put there by root, become the slot user's.
		// The overlay directories of a job in its image stay root's.
		overlay := filepath.Join(t.ScratchDir, ImageRootDir)
		if err := asuser.GiveTree(t.ScratchDir, r.user.uid, r.user.gid, func(p string) bool { return p == overlay }); err != nil {
			return spec{}, nil, fmt.Errorf("prepare scratch directory: %w", err)
		}
	}
	if err := checkTask(t, r.user); err != nil {
		return spec{}, nil, err
	}
	slotPath := slotCgroupPath(r.cfg.StateRoot, r.cfg.Slot)
	if !r.slotMade.Load() {
		if err := ensureSlotCgroup(slotPath); err != nil {
			return spec{}, nil, err
		}
		r.slotMade.Store(true)
	}
	id := containerID(r.cfg.Slot, t.ID)
	// A container of the same name can only be a leftover of this slot.
	if err := destroyContainer(containersDir(r.cfg.StateRoot, r.cfg.Slot), id); err != nil {
		return spec{}, nil, err
	}
	devices, err := hostDevices(t.Devices)
	if err != nil {
		return spec{}, nil, err
	}
	var (
		rootfs   string
		hostDirs []string
	)
	dir, dirSource := jobDir(t)
	var root *imageRoot
	if len(t.ImageLayers) > 0 {
		mountPoints := ownMounts
		if dirSource != "" && !under(dir, ownMounts) {
			mountPoints = append(slices.Clip(ownMounts), dir)
		}
		key := rootKey(t.ImageLayers, mountPoints)
		if rootDir == nil {
			root = r.takeRoot(key, t.ScratchDir)
		} else {
			r.dropKeptRoot() // the restored root is the job's own
		}
		if root == nil {
			if root, err = r.mountRoot(t, id, rootDir, key, mountPoints); err != nil {
				return spec{}, nil, err
			}
		}
		rootfs = root.target
	} else if rootfs, hostDirs, err = hostRoot(); errors.Is(err, errNoHostRoot) {
		rootfs = filepath.Join(r.cfg.StateRoot, "rootfs")
		if hostDirs, err = prepareRootfs(rootfs); err != nil {
			return spec{}, nil, fmt.Errorf("prepare container root %s: %w", rootfs, err)
		}
	} else if err != nil {
		return spec{}, nil, err
	}
	s := spec{
		devices:      devices,
		criuLabel:    checkpoint.ConfigFileLabel(containersDir(r.cfg.StateRoot, r.cfg.Slot), id),
		id:           id,
		root:         root,
		cgroupParent: slotPath,
		user:         r.user,
		scratch:      t.ScratchDir,
		dir:          dir,
		dirSource:    dirSource,
		cwd:          dir,
		rootfs:       rootfs,
		hostDirs:     hostDirs,
		memoryBytes:  t.MemoryMB << 20,
		noSwap:       t.MemoryMB > 0 && swapAccounting(),
		cpuShares:    uint64(max(t.Cpus, 1)) * 1024,
		cpuset:       t.Cpuset,
		pidsLimit:    r.cfg.PidsLimit,
	}
	s.rlimits = containerRlimits(t.Rlimits)
	if t.InScratch && dirSource != "" {
		s.cwd = JobScratchDir
	}
	if root == nil && dirSource != "" {
		if s.dirTop = dirTop(dir, r.user); s.dirTop != "" {
			if err := checkDirTop(dir, s.dirTop); err != nil {
				return spec{}, nil, err
			}
		}
	}
	s.hostname = s.id
	if r.cfg.CPUQuota && t.Cpus > 0 {
		s.cpuQuota = t.Cpus * cpuPeriod
	}
	return s, containerConfig(s), nil
}

// mountRoot mounts a root of its own for task t in its image, in
// container id, with rootDir (see makeImageRootDir), made afresh if nil.
func (r *Runner) mountRoot(t *Task, id string, rootDir *os.File, key string, mountPoints []string) (*imageRoot, error) {
	if rootDir == nil {
		var err error
		if rootDir, err = makeImageRootDir(t.ScratchDir); err != nil {
			return nil, err
		}
		defer rootDir.Close()
	}
	target, err := mountImageRoot(r.cfg.StateRoot, id, t, rootDir, mountPoints)
	if err != nil {
		return nil, err
	}
	root, err := newImageRoot(target, rootDir, key)
	if err != nil {
		_ = unmountImageRoot(target)
		return nil, err
	}
	return root, nil
}

// jobDir is where the job works in its container, and the host
// directory bound there: none when it is in the scratch directory.
func jobDir(t *Task) (dir, source string) {
	if t.DirSource != "" {
		return filepath.Clean(t.Dir), t.DirSource
	}
	dir, inScratch := inContainer(t, t.Dir)
	if inScratch {
		return dir, ""
	}
	return dir, dir
}

// inContainer is the path at which the job sees the host path p: the
// same, but for the scratch directory and what is in it, which the job
// sees at JobScratchDir.
func inContainer(t *Task, p string) (string, bool) {
	p = filepath.Clean(p)
	scratch := filepath.Clean(t.ScratchDir)
	if t.ScratchDir == "" || !under(p, []string{scratch}) {
		return p, false
	}
	rel, _ := filepath.Rel(scratch, p)
	return filepath.Join(JobScratchDir, rel), true
}

// process is the job's first process in the container s.
func (r *Runner) process(t *Task, s spec) *libcontainer.Process {
	path, _ := inContainer(t, t.Path)
	p := &libcontainer.Process{
		Args:   append([]string{path}, t.Args...),
		Env:    processEnv(t),
		Cwd:    s.cwd,
		UID:    r.user.uid,
		GID:    r.user.gid,
		Stdout: t.Stdout,
		Stderr: t.Stderr,
		Init:   true,
	}
	if t.Stdin != nil {
		p.Stdin = t.Stdin
	}
	return p
}

// processEnv is the environment of the job's processes.
func processEnv(t *Task) []string {
	env := t.Env
	if !hasVar(env, "PATH") {
		env = append(env[:len(env):len(env)], "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

// hasVar reports whether env sets name.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return true
		}
	}
	return false
}

// destroyContainer removes the state of container id under root, killing
// whatever still runs in it. A missing container is not an error.
func destroyContainer(root, id string) error {
	c, err := libcontainer.Load(root, id)
	if errors.Is(err, libcontainer.ErrNotExist) {
		return nil
	}
	if err != nil {
		// Unreadable state: the cgroup cleanup kills what runs; the
		// state directory just goes.
		return os.RemoveAll(filepath.Join(root, id))
	}
	if st, _ := c.Status(); st != libcontainer.Stopped {
		_ = c.Signal(os.Kill)
		_ = killCgroup(filepath.Join(c.Config().Cgroups.Parent, id))
	}
	// The job's init, orphaned when its starter was killed, is reaped by
	// whoever adopted it; until then libcontainer sees it running.
	deadline := time.Now().Add(destroyPatience)
	for {
		err = c.Destroy()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its processes are dead (the cgroup was killed) but one is not yet
	// reaped: the state can go without libcontainer's blessing.
	if kerr := killCgroup(filepath.Join(c.Config().Cgroups.Parent, id)); kerr != nil {
		return fmt.Errorf("destroy container %s: %w", id, errors.Join(err, kerr))
	}
	if rerr := os.RemoveAll(filepath.Join(root, id)); rerr != nil {
		return fmt.Errorf("destroy container %s: %w", id, errors.Join(err, rerr))
	}
	return nil
}

// destroyPatience is how long destroyContainer waits for a killed job's
// processes to be reaped.
const destroyPatience = 3 * time.Second

// User is the slot user the runner's jobs run as.
func (r *Runner) User() (uid, gid int) { return r.user.uid, r.user.gid }

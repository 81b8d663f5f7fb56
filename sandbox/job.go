package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Job is a job running in its container.
type Job struct {
	r    *Runner
	c    *libcontainer.Container
	p    *libcontainer.Process
	task *Task
	pid  int
	// root is the job's image root (nil: the job runs on the machine's
	// root, or its container is gone). It is set once; mu guards its
	// release.
	root *imageRoot
	// cgroups are the job's cgroup directories by controller ("" for
	// cgroup v2), read once at its start.
	cgroups map[string]string

	disk     atomic.Int64  // bytes in the scratch directory, last measured
	stopDisk chan struct{} // closed when the job has exited
	diskDone chan struct{}

	mu       sync.Mutex
	hold     string      // set by the disk check when it killed the job
	emulated unix.Signal // a signal the job's init could not receive, see Signal
}

func newJob(r *Runner, c *libcontainer.Container, p *libcontainer.Process, t *Task, root *imageRoot) *Job {
	pid, _ := p.Pid()
	j := &Job{r: r, c: c, p: p, task: t, pid: pid, root: root, stopDisk: make(chan struct{}), diskDone: make(chan struct{})}
	if st, err := c.State(); err == nil {
		j.cgroups = st.CgroupPaths
	}
	go j.watchDisk()
	return j
}

// Pid is the job's first process as the host sees it.
func (j *Job) Pid() int { return j.pid }

// Signal sends sig to every process of the job. SIGKILL ends the whole
// container even when it is suspended.
//
// The job's first process is its pid namespace's init, which the kernel
// shields from every signal it does not handle. Where the signal would
// have ended an ordinary process, Signal ends the job as the kernel
// would have (kill_sig SIGTERM must stop a plain shell loop), and at
// once: were the others signalled first, the init would go on without
// them for a moment, and a shell loop whose sleep died would begin its
// next step (truncate a file, say) before the kill.
func (j *Job) Signal(sig unix.Signal) error {
	if sig != unix.SIGKILL && fatalByDefault(sig) && !handles(j.pid, sig) {
		j.mu.Lock()
		j.emulated = sig
		j.mu.Unlock()
		sig = unix.SIGKILL
	}
	if sig == unix.SIGKILL {
		// The container has its own pid namespace: killing its init
		// kills everything in it.
		if err := j.c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
			return fmt.Errorf("kill job: %w", err)
		}
		return nil
	}
	pids, err := j.c.Processes()
	if err != nil {
		return fmt.Errorf("signal job: %w", err)
	}
	for _, pid := range pids {
		if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("signal job process %d: %w", pid, err)
		}
	}
	return nil
}

// fatalByDefault reports whether sig's default action ends a process.
func fatalByDefault(sig unix.Signal) bool {
	switch sig {
	case unix.SIGCHLD, unix.SIGCONT, unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU,
		unix.SIGURG, unix.SIGWINCH:
		return false
	}
	return sig > 0 && sig < 32
}

// handles reports whether process pid catches or ignores sig.
func handles(pid int, sig unix.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true // gone, or unknown: leave it to the kill that follows
	}
	bit := uint64(1) << (uint(sig) - 1)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigCgt" && k != "SigIgn") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&bit != 0 {
			return true
		}
	}
	return false
}

// Suspend freezes every process of the job (see freezeV1).
func (j *Job) Suspend() error {
	freeze := j.c.Pause
	if dir, v1 := j.cgroups["freezer"]; v1 {
		freeze = func() error { return freezeV1(dir, freezeTimeout) }
	}
	if err := freeze(); err != nil {
		return fmt.Errorf("suspend job: %w", err)
	}
	return nil
}

// Continue thaws a suspended job.
func (j *Job) Continue() error {
	if err := j.c.Resume(); err != nil {
		return fmt.Errorf("continue job: %w", err)
	}
	return nil
}

// Usage reads the job's CPU time and memory from its cgroup and the size
// of its scratch directory from the last measurement.
func (j *Job) Usage() (Usage, error) {
	u, err := cgroupUsage(j.cgroups)
	if err != nil {
		return Usage{}, fmt.Errorf("job usage: %w", err)
	}
	u.DiskBytes = j.disk.Load()
	return u, nil
}

// Wait waits for the job's first process to exit; with it goes every
// other process of the job (the pid namespace dies with its init). Then
// it reads the job's final usage, works out whether the job broke a limit,
// and removes the container: its cgroups, its mounts (with its mount
// namespace) and its state.
func (j *Job) Wait() (Exit, error) {
	// A job that exits non-zero comes back as an error with its status.
	ps, err := j.p.Wait()
	close(j.stopDisk)
	<-j.diskDone
	x := Exit{}
	if ps != nil {
		ws, _ := ps.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			x.Signal = int(ws.Signal())
		} else {
			x.Code = ws.ExitStatus()
		}
	}
	if u, uerr := j.Usage(); uerr == nil {
		x.Usage = u
	}
	if j.oomKilled() {
		x.HoldCode = HoldCodeOutOfResources
		x.HoldReason = fmt.Sprintf("Job has gone over memory limit of %d megabytes. Peak usage: %d megabytes.",
			j.task.MemoryMB, (x.Usage.MaxRSSBytes+(1<<20)-1)>>20)
	}
	j.mu.Lock()
	if x.Signal == int(unix.SIGKILL) && j.emulated != 0 {
		x.Signal = int(j.emulated)
	}
	if j.hold != "" && x.HoldReason == "" {
		x.HoldCode, x.HoldReason = HoldCodeOutOfResources, j.hold
	}
	j.mu.Unlock()
	if derr := j.destroy(); derr != nil {
		return x, derr
	}
	if ps == nil {
		return x, fmt.Errorf("wait for job: %w", err)
	}
	return x, nil
}

// destroy removes the container, killing anything left in its cgroup.
func (j *Job) destroy() error {
	_ = j.c.Signal(unix.SIGKILL)
	j.releaseCores()
	err := j.c.Destroy()
	if err != nil {
		// A process that escaped the namespace's end (it cannot, but the
		// cgroup is the authority) is killed by cgroup, then retry.
		path := filepath.Join(j.c.Config().Cgroups.Parent, j.c.ID())
		_ = killCgroup(path)
		err = j.c.Destroy()
	}
	if err != nil {
		return fmt.Errorf("remove container %s: %w", j.c.ID(), err)
	}
	// The slot's state directory on the memory file system goes with its
	// last container, lest it outlive the state root; the slot's next job
	// (the slot runs one at a time) makes it again.
	if dir := containersDir(j.r.cfg.StateRoot, j.r.cfg.Slot); dir != diskContainersDir(j.r.cfg.StateRoot) {
		_ = unix.Rmdir(dir)
	}
	j.mu.Lock()
	root := j.root
	j.root = nil
	j.mu.Unlock()
	if root == nil || j.r.keepRoot(root, j.task.ScratchDir) {
		return nil
	}
	return root.unmount()
}

// upperHandle is a handle of its own on the upper directory of the job's
// image root, for the caller to close; nil for a job on the machine's
// root. A job already destroyed has none.
func (j *Job) upperHandle() (*os.Root, error) {
	if len(j.task.ImageLayers) == 0 {
		return nil, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.root == nil {
		return nil, errors.New("the job's container is gone")
	}
	return j.root.upper.OpenRoot(".")
}

// releaseCores empties the cpuset of the job's cgroup (v1), now that no
// process is left in it, before the cgroup goes: removing a cpuset that
// still has cores rebuilds the machine's scheduler domains, walking every
// cpuset and task; one without does not. Where the kernel refuses (a
// process not yet gone), the removal just costs the rebuild.
func (j *Job) releaseCores() {
	if dir := j.cgroups["cpuset"]; dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "cpuset.cpus"), []byte("\n"), 0o644)
	}
}

// oomKilled reports whether the kernel killed a process of the job for
// going over its memory limit.
func (j *Job) oomKilled() bool {
	if j.task.MemoryMB <= 0 {
		return false
	}
	dir := j.cgroups["memory"]
	if dir == "" {
		dir = j.cgroups[""] // unified
	}
	for _, f := range []string{"memory.oom_control", "memory.events"} {
		if n, ok := readCounter(filepath.Join(dir, f), "oom_kill"); ok {
			return n > 0
		}
	}
	return false
}

// readCounter reads "key value" from a cgroup file of such lines.
func readCounter(path, key string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// watchDisk measures the scratch directory every DiskInterval and kills a
// job that holds more than DiskFactor times its disk request, or more
// than its scratch limit (Task.scratchLimit).
func (j *Job) watchDisk() {
	defer close(j.diskDone)
	dir := j.task.ScratchDir
	if dir == "" {
		return
	}
	t := time.NewTicker(j.r.cfg.DiskInterval)
	defer t.Stop()
	for {
		select {
		case <-j.stopDisk:
			j.disk.Store(dirSize(dir))
			return
		case <-t.C:
		}
		n := dirSize(dir)
		j.disk.Store(n)
		limit, kb := j.task.scratchLimit(j.r.cfg.DiskFactor)
		if limit > 0 && n > limit {
			j.mu.Lock()
			j.hold = fmt.Sprintf("Job has gone over disk limit of %d kilobytes. Scratch usage: %d kilobytes.",
				kb, n>>10)
			j.mu.Unlock()
			j.r.log.Info("job over disk limit", "container", j.c.ID(), "bytes", n, "limit", limit)
			_ = j.Signal(unix.SIGKILL)
			<-j.stopDisk
			return
		}
	}
}

// dirSize is the space the files under dir take on disk, in bytes. The
// job may swap a directory for a link while it is walked: the walk stays
// beneath dir all the same.
func dirSize(dir string) int64 {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0
	}
	defer root.Close()
	var n int64
	_ = fs.WalkDir(root.FS(), ".", func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

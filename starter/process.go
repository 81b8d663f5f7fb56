package starter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/asuser"
)

// ProcessRunner runs each job as a plain child process in its own process
// group, with no container and no limits: the fallback where containers are
// not available.
type ProcessRunner struct {
	// User is who jobs run as (the slot user), their scratch directory
	// theirs; nil: as the starter itself, which must then not be root.
	User *asuser.Credential
	// Track, if set, gives each job a group that keeps all its processes
	// (a cgroup), in which it starts: they all end with the job, those
	// that left its process group included. Without it a job is ended
	// by its process group.
	Track func() (ProcessTracker, error)
	// WithLimits is the command a job with resource limits (Task.Rlimits)
	// runs through: it is given RESOURCE=LIMIT arguments, "--", the
	// program's path, its argv[0] and its arguments, and sets the limits
	// and executes the program (harrier's exec-with-limits). Without it
	// such a job cannot start.
	WithLimits []string
}

// ProcessTracker keeps a job's processes together wherever they go.
type ProcessTracker interface {
	// FD is the group's cgroup directory, for CLONE_INTO_CGROUP.
	FD() int
	// Kill ends every process of the group and waits until they are
	// gone.
	Kill() error
	// Freeze stops every process of the group, or lets them go on.
	Freeze(on bool) error
	// CPU is the processor time the group's processes have used.
	CPU() (user, sys time.Duration, err error)
	// Close lets the group go.
	Close() error
}

// Start implements Runner.
func (r ProcessRunner) Start(_ context.Context, t *Task) (Job, error) {
	if r.User == nil && os.Geteuid() == 0 {
		return nil, errors.New("no user to run the job as: jobs do not run as root")
	}
	cmd := exec.Command(t.Path, t.Args...)
	if len(t.Rlimits) > 0 {
		// Go starts a process under its parent's limits, and the
		// starter's own must stay: the job's program is run through
		// WithLimits, which sets them as the job's user and becomes it.
		if len(r.WithLimits) == 0 {
			return nil, errors.New("cannot set the job's resource limits (coresize, stack_size) here")
		}
		if cmd.Err != nil {
			//lint:ignore ST1005 a hold reason, written as HTCondor writes it
			return nil, fmt.Errorf("Failed to execute '%s': %v", t.Path, cmd.Err)
		}
		args := slices.Clone(r.WithLimits[1:])
		for _, l := range t.Rlimits {
			args = append(args, fmt.Sprintf("%d=%d", l.Resource, l.Limit))
		}
		args = append(append(args, "--", cmd.Path, t.Path), t.Args...)
		cmd = exec.Command(r.WithLimits[0], args...)
	}
	cmd.Env = t.Env
	cmd.Dir = t.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.Stdin, t.Stdout, t.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: execCredential(r.User)}
	if r.User != nil && t.ScratchDir != "" {
		// The job's files, put there by the starter, become its user's.
		if err := asuser.GiveTree(t.ScratchDir, int(r.User.UID), int(r.User.GID), nil); err != nil {
			return nil, fmt.Errorf("prepare scratch directory: %w", err)
		}
	}
	var tracker ProcessTracker
	if r.Track != nil {
		var err error
		if tracker, err = r.Track(); err != nil {
			return nil, fmt.Errorf("keep the job's processes together: %w", err)
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, tracker.FD()
	}
	if err := cmd.Start(); err != nil {
		if tracker != nil {
			tracker.Close()
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return nil, fmt.Errorf("Failed to execute '%s': %v", t.Path, err)
	}
	return &process{cmd: cmd, start: time.Now(), tracker: tracker}, nil
}

// JobUser is the user the runner's jobs run as, for their transfer
// plugins and their output written on this machine.
func (r ProcessRunner) JobUser() (uid, gid int) {
	if r.User == nil {
		return os.Geteuid(), os.Getegid()
	}
	return int(r.User.UID), int(r.User.GID)
}

// process is a job started by ProcessRunner.
type process struct {
	cmd     *exec.Cmd
	start   time.Time
	tracker ProcessTracker // nil: the process group is all there is
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the job's process group.
func (p *process) Signal(sig unix.Signal) error { return unix.Kill(-p.cmd.Process.Pid, sig) }

// Suspend stops the job: all of it, frozen, where it is tracked; else
// its process group, with SIGSTOP.
func (p *process) Suspend() error {
	if p.tracker != nil {
		return p.tracker.Freeze(true)
	}
	return p.Signal(unix.SIGSTOP)
}

func (p *process) Continue() error {
	if p.tracker != nil {
		return p.tracker.Freeze(false)
	}
	return p.Signal(unix.SIGCONT)
}

func (p *process) Wait() (Exit, error) {
	err := p.cmd.Wait()
	// Nothing of the job may outlive it.
	_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	var tracked Usage
	if p.tracker != nil {
		kerr := p.tracker.Kill()
		if kerr == nil {
			tracked, kerr = p.Usage()
		}
		if err := errors.Join(kerr, p.tracker.Close()); err != nil {
			return Exit{}, err
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return Exit{}, err
	}
	x := Exit{}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		x.Signal = int(ws.Signal())
	} else {
		x.Code = ws.ExitStatus()
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		x.Usage = Usage{
			UserCPU:     time.Duration(ru.Utime.Nano()).Seconds(),
			SysCPU:      time.Duration(ru.Stime.Nano()).Seconds(),
			MaxRSSBytes: ru.Maxrss * 1024,
		}
	}
	if p.tracker != nil {
		// All of the job, not only what its first process waited for.
		x.Usage.UserCPU, x.Usage.SysCPU = tracked.UserCPU, tracked.SysCPU
	}
	return x, nil
}

// Usage is the job's processor time so far where it is tracked; else
// it is only known at exit.
func (p *process) Usage() (Usage, error) {
	if p.tracker == nil {
		return Usage{}, nil
	}
	user, sys, err := p.tracker.CPU()
	return Usage{UserCPU: user.Seconds(), SysCPU: sys.Seconds()}, err
}

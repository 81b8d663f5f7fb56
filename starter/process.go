package starter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	// Dedicated says that User is the slot's alone: when a job ends,
	// every process of User ends too, those that left the job's process
	// group included.
	Dedicated bool
}

// Start implements Runner.
func (r ProcessRunner) Start(_ context.Context, t *Task) (Job, error) {
	if r.User == nil && os.Geteuid() == 0 {
		return nil, errors.New("no user to run the job as: jobs do not run as root")
	}
	cmd := exec.Command(t.Path, t.Args...)
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
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		//lint:ignore ST1005 a hold reason, written as HTCondor writes it
		return nil, fmt.Errorf("Failed to execute '%s': %v", t.Path, err)
	}
	p := &process{cmd: cmd, start: time.Now()}
	if r.Dedicated && r.User != nil && r.User.UID != 0 {
		p.user = r.User
	}
	return p, nil
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
	cmd   *exec.Cmd
	start time.Time
	// user, if set, is the slot's own user, whose every process is the
	// job's.
	user *asuser.Credential
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the job's process group.
func (p *process) Signal(sig unix.Signal) error { return unix.Kill(-p.cmd.Process.Pid, sig) }

func (p *process) Suspend() error  { return p.Signal(unix.SIGSTOP) }
func (p *process) Continue() error { return p.Signal(unix.SIGCONT) }

func (p *process) Wait() (Exit, error) {
	err := p.cmd.Wait()
	// Nothing of the job may outlive it.
	_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	if p.user != nil {
		killAll(p.user)
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
	return x, nil
}

// Usage is only known at exit for a plain process.
func (p *process) Usage() (Usage, error) { return Usage{}, nil }

// killAll ends every process of the user c, by a process of c's own
// that sends SIGKILL to every process it may signal (kill(2)'s -1):
// those of c, found by the kernel at once, so that none forks away
// meanwhile. A process of root's would reach root's too.
func killAll(c *asuser.Credential) {
	kill := exec.Command("/bin/sh", "-c", "kill -s KILL -- -1")
	kill.SysProcAttr = &syscall.SysProcAttr{Credential: execCredential(c)}
	_ = kill.Run() // it fails when there was nothing left to end
}

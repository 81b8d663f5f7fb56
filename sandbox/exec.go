package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Exec is another process to start in a running job's container, for the
// job's owner (harrier ssh-to-job).
type Exec struct {
	Args []string
	// Env is added to the job's own environment.
	Env []string
	// With TTY the process gets a terminal of Rows x Cols, made inside
	// the container (its own devpts), as its standard input, output and
	// error; Process.Console is the terminal's master. Without, it gets
	// Stdin (nil: /dev/null), Stdout and Stderr.
	TTY        bool
	Rows, Cols uint16
	Stdin      *os.File
	Stdout     *os.File
	Stderr     *os.File
}

// Process is a process started by Job.Exec.
type Process struct {
	j       *Job
	p       *libcontainer.Process
	console *os.File
}

// Exec starts e in the job's container: in its namespaces and cgroup, so
// that what it uses counts as the job's and its limits hold it too, as
// the job's user with the container's privileges (none for a non-root
// user), in the job's working directory, with the job's environment and
// e.Env. It ends at the latest with the job: the kernel kills it with the
// rest of the job's pid namespace.
func (j *Job) Exec(e *Exec) (*Process, error) {
	if len(e.Args) == 0 {
		return nil, errors.New("exec in job: no command")
	}
	env := processEnv(j.task)
	env = append(env[:len(env):len(env)], e.Env...)
	dir, _ := jobDir(j.task)
	p := &libcontainer.Process{
		Args: e.Args,
		Env:  env,
		Cwd:  dir,
		UID:  j.r.user.uid,
		GID:  j.r.user.gid,
	}
	var local *os.File
	if e.TTY {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("exec in job: console socket: %w", err)
		}
		local = os.NewFile(uintptr(fds[0]), "console-local")
		defer local.Close()
		p.ConsoleSocket = os.NewFile(uintptr(fds[1]), "console-remote")
		p.ConsoleWidth, p.ConsoleHeight = e.Cols, e.Rows
	} else {
		if e.Stdin != nil {
			p.Stdin = e.Stdin
		}
		p.Stdout, p.Stderr = e.Stdout, e.Stderr
	}
	err := j.c.Run(p)
	if p.ConsoleSocket != nil {
		// The process has its copy; without ours, a process that never
		// sends its console ends the receive below.
		p.ConsoleSocket.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("exec in job: %w", err)
	}
	proc := &Process{j: j, p: p}
	if e.TTY {
		if proc.console, err = receiveFile(local); err != nil {
			_ = p.Signal(unix.SIGKILL)
			_, _ = p.Wait()
			return nil, fmt.Errorf("exec in job: receive its terminal: %w", err)
		}
	}
	return proc, nil
}

// Console is the master of the process's terminal; nil without one. The
// caller closes it once done with it.
func (p *Process) Console() *os.File { return p.console }

// Resize sets the size of the process's terminal.
func (p *Process) Resize(rows, cols uint16) error {
	if p.console == nil {
		return nil
	}
	raw, err := p.console.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := raw.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return err
	}
	return ioErr
}

// Kill kills the process. The rest of what it started in the job lives
// on, as after a lost ssh connection: only the job's end takes all.
func (p *Process) Kill() error {
	if err := p.p.Signal(unix.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill process in job: %w", err)
	}
	return nil
}

// Wait waits for the process to end and says how: its exit code, or the
// signal that killed it, and whether the job was ending then (its
// end took the process with it).
func (p *Process) Wait() (code, signal int, jobEnding bool, err error) {
	ps, err := p.p.Wait()
	if ps == nil {
		return 0, 0, false, fmt.Errorf("wait for process in job: %w", err)
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 0, int(ws.Signal()), p.j.initEnding(), nil
	}
	return ws.ExitStatus(), 0, false, nil
}

// initEnding reports whether the job's first process is exiting, or has
// exited: when it goes, the kernel kills the rest of its pid namespace.
func (j *Job) initEnding() bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(j.pid) + "/stat")
	if err != nil {
		return true // reaped
	}
	// The fields after the command's name, which may hold anything:
	// state, ppid, pgrp, session, tty, tpgid, flags.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true
	}
	const pfExiting = 0x4
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	return flags&pfExiting != 0
}

// receiveFile receives one file descriptor sent over the Unix socket s.
func receiveFile(s *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(s.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("got %d control messages, want 1", len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("got %d descriptors, want 1", len(fds))
	}
	// Non-blocking, so that closing the file ends a read in progress.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}

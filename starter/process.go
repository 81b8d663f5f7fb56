package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/wire"
)

// How long a job has between its soft kill signal and SIGKILL.
const killGrace = 5 * time.Second

// process is a job run as a plain child process in its own process group.
// (The sandbox replaces this with a container.)
type process struct {
	path    string
	args    []string
	env     []string
	dir     string
	stdin   string // file to read standard input from; empty for /dev/null
	killSig string // HTCondor kill_sig: a name such as "SIGTERM" or a number
}

// execute runs the job to its end, streaming its output through send. A
// reason arriving on kills stops it: the kill signal first, SIGKILL after
// the grace time. It returns an error only when the job could not start.
func (p *process) execute(ctx context.Context, send *sender, kills <-chan string, logger *slog.Logger) (*wire.Exited, error) {
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.stdin != "" {
		f, err := os.Open(p.stdin)
		if err != nil {
			return nil, fmt.Errorf("open job input: %w", err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	// Our own pipes rather than cmd.StdoutPipe: the job's exit, not the
	// pipes closing, ends the run, so a leftover background process holding
	// them open cannot keep the job alive.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		return nil, fmt.Errorf("Failed to execute '%s': %v", p.path, errors.Unwrap(err))
	}
	if err := send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Started{Started: &wire.Started{Pid: int32(cmd.Process.Pid)}}}); err != nil {
		logger.Warn("report start", "err", err)
	}
	copied := make(chan struct{}, 2)
	go pump(stdoutR, 1, send, copied)
	go pump(stderrR, 2, send, copied)

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	pgid := cmd.Process.Pid
	var hardKill <-chan time.Time
	for {
		select {
		case reason := <-kills:
			logger.Info("stopping job", "reason", reason)
			_ = unix.Kill(-pgid, signalNumber(p.killSig))
			hardKill = time.After(killGrace)
			kills = nil
		case <-ctx.Done():
			_ = unix.Kill(-pgid, unix.SIGKILL)
			ctx = context.Background()
		case <-hardKill:
			_ = unix.Kill(-pgid, unix.SIGKILL)
		case err := <-waited:
			// Nothing of the job may outlive it; then its output is complete.
			_ = unix.Kill(-pgid, unix.SIGKILL)
			<-copied
			<-copied
			stdoutR.Close()
			stderrR.Close()
			return exitStatus(cmd, err), nil
		}
	}
}

// pump streams one of the job's output pipes to the shadow.
func pump(r io.Reader, fd int32, send *sender, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: fd, Data: data}}}) != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func exitStatus(cmd *exec.Cmd, err error) *wire.Exited {
	x := &wire.Exited{}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		x.BySignal, x.Signal = true, int32(ws.Signal())
	} else {
		x.ExitCode = int32(ws.ExitStatus())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		x.Usage = &wire.Usage{
			UserCpuSeconds: time.Duration(ru.Utime.Nano()).Seconds(),
			SysCpuSeconds:  time.Duration(ru.Stime.Nano()).Seconds(),
			MaxRssBytes:    ru.Maxrss * 1024,
		}
	}
	_ = err // the wait status carries everything err would
	return x
}

// signalNumber reads HTCondor's kill_sig ("SIGTERM", "TERM", "15");
// anything unknown means SIGTERM.
func signalNumber(name string) unix.Signal {
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return unix.Signal(n)
	}
	name = strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return unix.SIGTERM
}

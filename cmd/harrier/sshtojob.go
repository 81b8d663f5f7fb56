package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// runSshToJob starts a shell, or COMMAND, in a running job of the
// caller's, as condor_ssh_to_job does:
//
//	harrier ssh-to-job [-auto-retry] ID [-- COMMAND ARGS...]
//
// The process runs on the execute machine inside the job's container, as
// the job's user, in its working directory, with its environment, its
// use counted as the job's. The tool reaches it through the local agent,
// which checks that the caller owns the job (root may use any), and the
// job's shadow and starter, over their session: nothing listens for it.
// When the tool's standard input is a terminal the process gets one too,
// of the same size, following its changes; otherwise its standard input,
// output and error are the tool's. The tool exits with the process's
// status (128+N for signal N); a session the job's end (or a vacate, or a
// checkpoint) cut short ends with an error saying so.
func runSshToJob(args []string, stdin io.Reader, stdout io.Writer) error {
	tf := newToolFlags("ssh-to-job")
	autoRetry := tf.fs.Bool("auto-retry", false, "wait while the job is idle or suspended instead of failing")
	tf.refuse("refused: "+localAgent, "name=")
	tf.refuse("not yet: the process is no ssh session; give a command after --", "ssh=", "keygen-options=", "shells=")
	tf.refuse("not yet", "remove-on-interrupt", "X")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	if tf.fs.NArg() < 1 {
		return usagef("want a job id (cluster.proc)")
	}
	id := tf.fs.Arg(0)
	if !strings.Contains(id, ".") {
		id += ".0" // HTCondor's: a cluster means its first job
	}
	if ids, _ := splitIDs([]string{id}); len(ids) == 0 {
		return usagef("bad job id %q: want cluster.proc", id)
	}
	open := &wire.ShellOpen{JobId: id, Args: tf.fs.Args()[1:]}
	in, _ := stdin.(*os.File)
	term := in != nil && isTTY(in)
	if term {
		open.Tty, open.Term = true, os.Getenv("TERM")
		open.Rows, open.Cols = windowSize(in)
	}
	for {
		err := sshSession(client, open, in, stdin, stdout)
		if *autoRetry && status.Code(errors.Unwrap(err)) == codes.Unavailable {
			time.Sleep(2 * time.Second)
			continue
		}
		return err
	}
}

// sshSession runs one session: open, relay, exit.
func sshSession(client wire.ScheddClient, open *wire.ShellOpen, in *os.File, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.SshToJob(ctx)
	if err != nil {
		return sshError(err)
	}
	// A stream the agent has already ended (a refusal) fails the send with
	// io.EOF; its reason comes with the receive.
	if err := stream.Send(&wire.ShellRequest{Body: &wire.ShellRequest_Open{Open: open}}); err != nil && !errors.Is(err, io.EOF) {
		return sshError(err)
	}
	// The first reply says whether the process started.
	first, err := stream.Recv()
	if err != nil {
		return sshError(err)
	}
	if x := first.GetExited(); x != nil {
		return fmt.Errorf("job %s: %s", open.JobId, x.Reason)
	}
	if open.Tty {
		restore, err := rawMode(in)
		if err != nil {
			return err
		}
		defer restore()
	}
	// gRPC takes one send at a time on a stream: the input's and the
	// resizes' take turns.
	var sendMu sync.Mutex
	send := func(r *wire.ShellRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(r)
	}
	if open.Tty {
		stopResize := followResize(in, func(rows, cols uint32) {
			_ = send(&wire.ShellRequest{Body: &wire.ShellRequest_Resize{Resize: &wire.ShellResize{Rows: rows, Cols: cols}}})
		})
		defer stopResize()
	}
	go sendInput(send, stdin, open.Tty)
	for {
		m, err := stream.Recv()
		if err != nil {
			return sshError(err)
		}
		switch b := m.Body.(type) {
		case *wire.ShellReply_Output:
			w := stdout
			if b.Output.Fd == 2 {
				w = os.Stderr
			}
			if _, err := w.Write(b.Output.Data); err != nil {
				return err
			}
		case *wire.ShellReply_Exited:
			return exitOf(b.Exited)
		}
	}
}

// exitOf is the tool's ending for the process's x.
func exitOf(x *wire.ShellExited) error {
	switch {
	case x.Reason != "":
		return fmt.Errorf("the session ended: %s", x.Reason)
	case x.Signal != 0:
		return exitError(128 + int(x.Signal))
	case x.ExitCode != 0:
		return exitError(int(x.ExitCode))
	}
	return nil
}

// sshError keeps the gRPC status of err, for -auto-retry, behind the
// agent's message.
func sshError(err error) error {
	if s, ok := status.FromError(err); ok {
		return sshRefusal{s.Message(), err}
	}
	return err
}

type sshRefusal struct {
	msg string
	err error
}

func (r sshRefusal) Error() string { return r.msg }
func (r sshRefusal) Unwrap() error { return r.err }

// sendInput sends the tool's input, and its end, to the process.
func sendInput(send func(*wire.ShellRequest) error, stdin io.Reader, tty bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if send(&wire.ShellRequest{Body: &wire.ShellRequest_Input{Input: &wire.ShellInput{Data: data}}}) != nil {
				return
			}
		}
		if err != nil {
			// A terminal's user ends the session from inside it.
			if !tty {
				_ = send(&wire.ShellRequest{Body: &wire.ShellRequest_Input{Input: &wire.ShellInput{Eof: true}}})
			}
			return
		}
	}
}

// isTTY reports whether f is a terminal (not merely a character device
// such as /dev/null).
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// windowSize is the size of the terminal f.
func windowSize(f *os.File) (rows, cols uint32) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 24, 80
	}
	return uint32(ws.Row), uint32(ws.Col)
}

// rawMode passes every key to the remote terminal as typed, as ssh
// does, until the returned function restores the terminal.
func rawMode(f *os.File) (func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("terminal settings: %w", err)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("terminal settings: %w", err)
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// followResize calls resize with the terminal's new size whenever it
// changes (SIGWINCH), until the returned function is called.
func followResize(f *os.File, resize func(rows, cols uint32)) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				resize(windowSize(f))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

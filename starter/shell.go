package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"harrier.dev/harrier/wire"
)

// A job's owner may start processes in the running job (harrier
// ssh-to-job). The shadow asks on the job's session (ShellOpen); the
// starter starts the process in the job (Execer), as the job's user, and
// opens a Shell stream to the shadow for it, over the connection it
// already has. Nothing the owner sends is run outside the job: the
// arguments go to the job's container, the input to the process.

// shellChunk bounds the output in one message: what the shadow takes
// (shadow.ShellChunk).
const shellChunk = 32 << 10

// shellDrain is how long a process's output is read after it exits:
// what it wrote is there at once, and what a process it left behind
// writes later is not waited for.
const shellDrain = 200 * time.Millisecond

// shellEndTimeout is how long the job's end waits for its processes'
// streams to report their end to the shadow before cutting them.
const shellEndTimeout = 10 * time.Second

// shells are the processes started in one job for its owner.
type shells struct {
	client wire.ShadowClient
	secret string
	logger *slog.Logger

	wg sync.WaitGroup
	mu sync.Mutex
	// open are the processes whose streams are still going.
	open map[*shellProc]bool
	// jobEnded is closed once the job has ended, endReason saying how.
	jobEnded  chan struct{}
	endReason string
}

func newShells(client wire.ShadowClient, secret string, logger *slog.Logger) *shells {
	return &shells{client: client, secret: secret, logger: logger, open: make(map[*shellProc]bool), jobEnded: make(chan struct{})}
}

// shellProc is one process in the job and its stream.
type shellProc struct {
	session uint64
	proc    Process
	// stdin is where the process's input goes: its terminal or a pipe.
	stdin io.WriteCloser
	// outputs are read and sent to the shadow: the terminal (as fd 1),
	// or the stdout and stderr pipes.
	outputs []*os.File
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	reason string // why the starter ended it
}

// start starts the process o asks for in job (unless refused says why
// not) and serves its stream until it ends. It is called from the
// execution's own goroutine, so that the job's state it was checked
// against cannot change under it.
func (s *shells) start(ctx context.Context, o *wire.ShellOpen, job Execer, refused string) {
	ctx, cancel := context.WithCancel(ctx)
	p := &shellProc{session: o.Session, cancel: cancel, done: make(chan struct{})}
	if refused == "" {
		if err := p.exec(ctx, job, o); err != nil {
			refused = err.Error()
		}
	}
	s.mu.Lock()
	s.open[p] = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(p.done)
		defer cancel()
		s.serve(ctx, p, refused)
		s.mu.Lock()
		delete(s.open, p)
		s.mu.Unlock()
	}()
}

// exec starts the process in the job.
func (p *shellProc) exec(ctx context.Context, job Execer, o *wire.ShellOpen) error {
	args := o.Args
	if len(args) == 0 {
		args = []string{defaultShell()}
	}
	t := &ExecTask{Args: args, TTY: o.Tty, Rows: clamp16(o.Rows), Cols: clamp16(o.Cols)}
	if o.Tty {
		t.Env = []string{"TERM=" + termName(o.Term)}
		proc, err := job.Exec(ctx, t)
		if err != nil {
			return err
		}
		p.proc, p.stdin, p.outputs = proc, proc.Console(), []*os.File{proc.Console()}
		return nil
	}
	var ends [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	closeAll := func() {
		for _, f := range ends {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < len(ends); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return fmt.Errorf("pipes for the process: %w", err)
		}
		ends[i], ends[i+1] = r, w
	}
	t.Stdin, t.Stdout, t.Stderr = ends[0], ends[3], ends[5]
	proc, err := job.Exec(ctx, t)
	// The process has its ends now; the starter keeps the others.
	ends[0].Close()
	ends[3].Close()
	ends[5].Close()
	if err != nil {
		ends[1].Close()
		ends[2].Close()
		ends[4].Close()
		return err
	}
	p.proc, p.stdin, p.outputs = proc, ends[1], []*os.File{ends[2], ends[4]}
	return nil
}

// defaultShell is the shell a process without a command gets.
func defaultShell() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return "/bin/sh"
}

// termName is the caller's TERM if it is a plausible terminal name.
func termName(term string) string {
	if term == "" || len(term) > 64 {
		return "xterm"
	}
	for _, c := range term {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '+') {
			return "xterm"
		}
	}
	return term
}

func clamp16(n uint32) uint16 { return uint16(min(n, 1<<16-1)) }

// serve runs p's stream to the shadow: the hello, then output and input
// until the process ends, then its exit.
func (s *shells) serve(ctx context.Context, p *shellProc, refused string) {
	stream, err := s.client.Shell(ctx)
	if err == nil {
		err = stream.Send(&wire.ShellReply{Body: &wire.ShellReply_Hello{Hello: &wire.ShellHello{Secret: s.secret, Session: p.session}}})
	}
	if err != nil {
		s.logger.Warn("open a process's stream to the shadow", "err", err)
		if p.proc != nil {
			_ = p.proc.Kill()
			_, _ = p.proc.Wait()
			p.closeFiles()
		}
		return
	}
	var sendMu sync.Mutex
	send := func(m *wire.ShellReply) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	// The shadow ends the stream once it has the exit.
	finish := func(x *wire.ShellExited) {
		if err := send(&wire.ShellReply{Body: &wire.ShellReply_Exited{Exited: x}}); err == nil {
			_ = stream.CloseSend()
		}
	}
	if refused != "" {
		finish(&wire.ShellExited{Refused: true, Reason: refused})
		for {
			if _, err := stream.Recv(); err != nil {
				return
			}
		}
	}
	s.logger.Info("process started in the job for its owner", "session", p.session, "tty", len(p.outputs) == 1)
	if err := send(&wire.ShellReply{Body: &wire.ShellReply_Started{Started: &wire.ShellStarted{}}}); err != nil {
		_ = p.proc.Kill()
	}
	received := make(chan struct{})
	go func() {
		defer close(received)
		p.receive(stream)
	}()
	pumped := make(chan struct{}, len(p.outputs))
	for i, f := range p.outputs {
		go pumpShell(f, int32(i+1), send, pumped)
	}
	x, werr := p.proc.Wait()
	// What the process wrote is read; what it left behind writes later
	// is not waited for.
	for _, f := range p.outputs {
		_ = f.SetReadDeadline(time.Now().Add(shellDrain))
	}
	for range p.outputs {
		<-pumped
	}
	exited := &wire.ShellExited{ExitCode: int32(x.Code), Signal: int32(x.Signal)}
	switch {
	case werr != nil:
		exited.Signal, exited.Reason = 9, werr.Error()
	case x.JobEnding:
		<-s.jobEnded
		exited.Reason = s.endReason
	default:
		exited.Reason = p.endReason()
	}
	s.logger.Info("process in the job ended", "session", p.session, "code", x.Code, "signal", x.Signal, "reason", exited.Reason)
	// Closed first: an input write to a pipe no one reads any more
	// returns, and the receiver goes on to the stream's end.
	p.closeFiles()
	finish(exited)
	<-received
}

// receive passes the shadow's input and resizes to the process; a lost
// stream kills it.
func (p *shellProc) receive(stream wire.Shadow_ShellClient) {
	for {
		m, err := stream.Recv()
		if err != nil {
			_ = p.proc.Kill()
			return
		}
		switch b := m.Body.(type) {
		case *wire.ShellRequest_Input:
			if len(b.Input.Data) > 0 {
				if _, err := p.stdin.Write(b.Input.Data); err != nil {
					continue // the process stopped reading; its end comes
				}
			}
			// A terminal has no end of input but what the user types.
			if b.Input.Eof && len(p.outputs) == 2 {
				_ = p.stdin.Close()
			}
		case *wire.ShellRequest_Resize:
			_ = p.proc.Resize(clamp16(b.Resize.Rows), clamp16(b.Resize.Cols))
		}
	}
}

// pumpShell sends what the process writes on f to the shadow as fd.
func pumpShell(f *os.File, fd int32, send func(*wire.ShellReply) error, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, shellChunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if send(&wire.ShellReply{Body: &wire.ShellReply_Output{Output: &wire.Output{Fd: fd, Data: data}}}) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *shellProc) closeFiles() {
	_ = p.stdin.Close()
	for _, f := range p.outputs {
		_ = f.Close()
	}
}

func (p *shellProc) endReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

// stop ends every process with reason before something the processes
// must not be part of (a checkpoint), and waits for them to report it.
func (s *shells) stop(reason string) {
	s.mu.Lock()
	open := make([]*shellProc, 0, len(s.open))
	for p := range s.open {
		open = append(open, p)
	}
	s.mu.Unlock()
	for _, p := range open {
		if p.proc == nil {
			continue
		}
		p.mu.Lock()
		p.reason = reason
		p.mu.Unlock()
		_ = p.proc.Kill()
	}
	s.await(open)
}

// end records how the job ended, for the processes its end took along,
// kills any left, and waits for them all to report their end.
func (s *shells) end(reason string) {
	s.mu.Lock()
	s.endReason = reason
	close(s.jobEnded)
	open := make([]*shellProc, 0, len(s.open))
	for p := range s.open {
		open = append(open, p)
	}
	s.mu.Unlock()
	for _, p := range open {
		if p.proc != nil {
			p.mu.Lock()
			p.reason = reason
			p.mu.Unlock()
			_ = p.proc.Kill()
		}
	}
	s.await(open)
	s.wg.Wait()
}

// await waits for the processes' streams to end, cutting those the
// shadow does not take their end from in time.
func (s *shells) await(open []*shellProc) {
	timeout := time.NewTimer(shellEndTimeout)
	defer timeout.Stop()
	for _, p := range open {
		select {
		case <-p.done:
			continue
		case <-timeout.C:
		}
		s.logger.Warn("processes in the job did not report their end in time", "after", shellEndTimeout)
		for _, q := range open {
			q.cancel()
		}
		break
	}
	for _, p := range open {
		<-p.done
	}
}

// errNoExec refuses a process in a job its runner cannot start one in.
var errNoExec = errors.New("this execute machine runs jobs without containers: no process can be started in the job")

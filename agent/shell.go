package agent

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

// A job's owner (or root) may start a process in the running job, as
// condor_ssh_to_job does. The tool asks the agent over the local socket,
// which says who calls; the agent, once it has checked that the caller
// may, goes through the job's shadow, which asks the job's starter on
// their session. Nothing new listens anywhere, and the process runs only
// inside the job, as the job's user.

// Bounds of what a tool may ask for.
const (
	maxShellArgs      = 1024
	maxShellArgsBytes = 128 << 10
)

// SshToJob starts a process in a running job of the caller's and relays
// its input, output and exit.
func (s *scheddService) SshToJob(stream wire.Schedd_SshToJobServer) error {
	who, err := callerFrom(stream.Context())
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOpen()
	if o == nil {
		return status.Error(codes.InvalidArgument, "the first request must open the process")
	}
	open, err := shellOpen(o)
	if err != nil {
		return err
	}
	id, err := jobqueue.ParseJobID(o.JobId)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	r, err := s.a.shellRun(who, id)
	if err != nil {
		return err
	}
	sh, err := r.shells.open(s.a.shellSeq.Add(1), open)
	if err != nil {
		return status.Errorf(codes.Unavailable, "job %s: %v", id, err)
	}
	s.a.log.Info("process started in job for its owner", "job", id, "caller", who.name, "session", sh.id, "tty", open.TTY)
	defer r.shells.forget(sh)

	inputDone := make(chan error, 1)
	go func() { inputDone <- r.shells.input(sh, stream) }()
	for {
		select {
		case ev := <-sh.out:
			if err := stream.Send(shellReply(ev)); err != nil {
				r.shells.close(sh)
				return err
			}
			if !ev.Started {
				r.shells.send(shadow.ShellCommand{Session: sh.id, Acked: 1})
			}
		case <-sh.done:
			// What came before the end goes first.
			for len(sh.out) > 0 {
				if err := stream.Send(shellReply(<-sh.out)); err != nil {
					return err
				}
			}
			x := sh.exit
			return stream.Send(&wire.ShellReply{Body: &wire.ShellReply_Exited{Exited: &wire.ShellExited{
				ExitCode: int32(x.Code), Signal: int32(x.Signal), Refused: x.Refused, Reason: x.Reason}}})
		case err := <-inputDone:
			// The tool went away, or sent what it may not.
			if err != nil {
				r.shells.close(sh)
				return err
			}
			inputDone = nil // its input ended; its output goes on
		}
	}
}

// shellReply is the tool's copy of the process's start or output.
func shellReply(ev *shadow.ShellEvent) *wire.ShellReply {
	if ev.Started {
		return &wire.ShellReply{Body: &wire.ShellReply_Started{Started: &wire.ShellStarted{}}}
	}
	return &wire.ShellReply{Body: &wire.ShellReply_Output{Output: &wire.Output{Fd: int32(ev.Fd), Data: ev.Data}}}
}

// shellOpen checks what a tool asks to start.
func shellOpen(o *wire.ShellOpen) (*shadow.ShellOpen, error) {
	n := 0
	for _, a := range o.Args {
		n += len(a)
	}
	if len(o.Args) > maxShellArgs || n > maxShellArgsBytes {
		return nil, status.Errorf(codes.InvalidArgument, "a command of %d arguments and %d bytes: at most %d and %d", len(o.Args), n, maxShellArgs, maxShellArgsBytes)
	}
	if len(o.Term) > 64 {
		return nil, status.Error(codes.InvalidArgument, "TERM longer than 64 bytes")
	}
	size := func(n uint32) uint16 { return uint16(min(n, 1<<16-1)) }
	return &shadow.ShellOpen{Args: o.Args, TTY: o.Tty, Size: shadow.ShellSize{Rows: size(o.Rows), Cols: size(o.Cols)}, Term: o.Term}, nil
}

// shellRun returns the run of job id, if who may start a process in it
// and it is running.
func (a *Agent) shellRun(who caller, id jobqueue.JobID) (*run, error) {
	ad, ok := a.queue.Get(id)
	if !ok || !isJob(id) {
		return nil, status.Errorf(codes.NotFound, "job %s is not in the queue", id)
	}
	owner, _ := ad.EvalString(AttrOwner)
	if !who.mayEdit(owner) {
		return nil, status.Errorf(codes.PermissionDenied, "job %s is %s's: only its owner (or root) may start processes in it", id, owner)
	}
	switch st := statusOf(ad); st {
	case Running:
	case Suspended:
		return nil, status.Errorf(codes.Unavailable, "job %s is suspended (by the execute machine's owner policy, or by its owner: harrier continue); try again when it runs", id)
	case Idle:
		return nil, status.Errorf(codes.Unavailable, "job %s is not running yet (it is idle)", id)
	default:
		return nil, status.Errorf(codes.FailedPrecondition, "job %s is not running (it is %s)", id, st)
	}
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	if r == nil {
		return nil, status.Errorf(codes.Unavailable, "job %s is not running now", id)
	}
	return r, nil
}

// runShells are the processes started in a run's job, and the way to its
// shadow while the shadow serves the job.
type runShells struct {
	mu     sync.Mutex
	shadow *childproc.Sender[shadow.Command] // nil when no shadow serves the job
	byID   map[uint64]*agentShell
	reason string // why there are no more
}

// agentShell is one process in the job, as the agent relays it.
type agentShell struct {
	id uint64
	// out is the process's output; the shadow sends at most ShellWindow
	// unacknowledged.
	out chan *shadow.ShellEvent
	// credits are the input messages the shadow can take now.
	credits chan struct{}
	// done is closed once the process has ended, exit saying how.
	done     chan struct{}
	exit     *shadow.ShellExit
	doneOnce sync.Once
}

func (sh *agentShell) end(x *shadow.ShellExit) {
	sh.doneOnce.Do(func() {
		sh.exit = x
		close(sh.done)
	})
}

// attach lets processes be started through the shadow that now serves
// the job.
func (t *runShells) attach(send *childproc.Sender[shadow.Command]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reason == "" {
		t.shadow = send
	}
}

// detach ends the processes still open with reason: the job's run is
// over, and no more are started.
func (t *runShells) detach(reason string) {
	t.mu.Lock()
	if t.reason == "" {
		t.reason = reason
	}
	t.shadow = nil
	open := t.byID
	t.byID = nil
	t.mu.Unlock()
	for _, sh := range open {
		sh.end(&shadow.ShellExit{Signal: 9, Reason: reason})
	}
}

// open registers a new process and asks the shadow to start it.
func (t *runShells) open(id uint64, o *shadow.ShellOpen) (*agentShell, error) {
	// The window's output, and the start before it.
	sh := &agentShell{id: id, out: make(chan *shadow.ShellEvent, shadow.ShellWindow+1),
		credits: make(chan struct{}, shadow.ShellWindow), done: make(chan struct{})}
	for range shadow.ShellWindow {
		sh.credits <- struct{}{}
	}
	t.mu.Lock()
	send := t.shadow
	if send == nil {
		reason := t.reason
		t.mu.Unlock()
		if reason != "" {
			return nil, errors.New(reason)
		}
		return nil, errors.New("the job is not running yet")
	}
	if t.byID == nil {
		t.byID = make(map[uint64]*agentShell)
	}
	t.byID[id] = sh
	t.mu.Unlock()
	// Not under the lock: the shadow may be busy reporting to the agent,
	// whose event loop delivers through it.
	if err := send.Send(shadow.Command{Shell: &shadow.ShellCommand{Session: id, Open: o}}); err != nil {
		t.forget(sh)
		return nil, fmt.Errorf("reach the job's shadow: %w", err)
	}
	return sh, nil
}

// send passes c to the shadow, if one serves the job.
func (t *runShells) send(c shadow.ShellCommand) {
	t.mu.Lock()
	send := t.shadow
	t.mu.Unlock()
	if send != nil {
		_ = send.Send(shadow.Command{Shell: &c})
	}
}

// deliver takes a shell event of the shadow's.
func (t *runShells) deliver(ev *shadow.ShellEvent) {
	if ev == nil {
		return
	}
	t.mu.Lock()
	sh := t.byID[ev.Session]
	if sh != nil && ev.Exited != nil {
		delete(t.byID, ev.Session)
	}
	t.mu.Unlock()
	switch {
	case sh == nil:
	case ev.Exited != nil:
		sh.end(ev.Exited)
	case ev.Acked > 0:
		for range min(ev.Acked, shadow.ShellWindow) {
			select {
			case sh.credits <- struct{}{}:
			default:
			}
		}
	default:
		select {
		case sh.out <- ev:
		default:
			// The shadow sent beyond the window.
			t.close(sh)
			sh.end(&shadow.ShellExit{Signal: 9, Reason: "the shadow overran the process's output window"})
		}
	}
}

// close ends the process on the shadow's side: its caller went away.
func (t *runShells) close(sh *agentShell) {
	t.forget(sh)
	t.send(shadow.ShellCommand{Session: sh.id, Close: true})
	// The caller's input, waiting for the window, gives up.
	sh.end(&shadow.ShellExit{Signal: 9, Reason: "the caller went away"})
}

// forget drops sh from the run's processes.
func (t *runShells) forget(sh *agentShell) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[sh.id] == sh {
		delete(t.byID, sh.id)
	}
}

// input passes the tool's input to the process as the shadow takes it.
// It returns nil at the end of the tool's input or the process, and an
// error if the tool went away.
func (t *runShells) input(sh *agentShell, stream wire.Schedd_SshToJobServer) error {
	credit := func() bool {
		select {
		case <-sh.credits:
			return true
		case <-sh.done:
			return false
		}
	}
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch b := req.Body.(type) {
		case *wire.ShellRequest_Input:
			data := b.Input.Data
			for len(data) > 0 || b.Input.Eof {
				n := min(len(data), shadow.ShellChunk)
				if !credit() {
					return nil
				}
				c := shadow.ShellCommand{Session: sh.id, Input: data[:n]}
				data = data[n:]
				c.EOF = b.Input.Eof && len(data) == 0
				t.send(c)
				if c.EOF {
					break
				}
			}
		case *wire.ShellRequest_Resize:
			if !credit() {
				return nil
			}
			size := func(n uint32) uint16 { return uint16(min(n, 1<<16-1)) }
			t.send(shadow.ShellCommand{Session: sh.id, Resize: &shadow.ShellSize{Rows: size(b.Resize.Rows), Cols: size(b.Resize.Cols)}})
		default:
			return status.Error(codes.InvalidArgument, "only input and resizes follow the open")
		}
	}
}

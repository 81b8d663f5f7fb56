package shadow

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// The processes a job's owner starts in the running job (harrier
// ssh-to-job) go through the shadow: the agent, which has checked who
// asks, sends ShellCommands; the shadow asks the starter on the job's
// session (ShellOpen) and the starter opens a Shell stream of its own,
// over the same mutually authenticated connection, which the shadow
// joins to the agent's commands and events. The shadow, running as the
// job's owner, trusts neither side with more than the window allows.

// shells are a job's processes started for its owner, by session.
type shells struct {
	mu     sync.Mutex
	byID   map[uint64]*shell
	closed bool // the job's run is over: no more
}

// shell is one process in the job, from the agent's open to its end.
type shell struct {
	id     uint64
	events func(Event)
	// in carries input, EOF and resizes to the starter's stream; the
	// agent sends at most ShellWindow unacknowledged.
	in chan *wire.ShellRequest
	// credits are the output messages the agent can take now.
	credits chan struct{}
	// joined is set once the starter's stream has come.
	joined bool
	// done is closed when the process has ended, for whatever reason.
	done    chan struct{}
	endOnce sync.Once
	table   *shells
}

// shellOpenTimeout is how long a starter has to open the stream of a
// process the shadow asked it for.
const shellOpenTimeout = 60 * time.Second

// openShell starts a process for the agent's command c, unless the job
// has no starter to run it.
func (s *Shadow) openShell(c *ShellCommand) {
	refuse := func(reason string) {
		s.events(Event{Type: EventShell, Shell: &ShellEvent{Session: c.Session, Exited: &ShellExit{Refused: true, Reason: reason}}})
	}
	o := c.Open
	if !s.isAttached() {
		refuse("the job is not running yet")
		return
	}
	sh := &shell{id: c.Session, events: s.events, in: make(chan *wire.ShellRequest, ShellWindow),
		credits: make(chan struct{}, ShellWindow), done: make(chan struct{}), table: &s.shells}
	for range ShellWindow {
		sh.credits <- struct{}{}
	}
	t := &s.shells
	t.mu.Lock()
	if t.closed || t.byID[c.Session] != nil {
		t.mu.Unlock()
		refuse("the job is not running")
		return
	}
	if t.byID == nil {
		t.byID = make(map[uint64]*shell)
	}
	t.byID[c.Session] = sh
	t.mu.Unlock()
	req := &wire.ShellOpen{Session: c.Session, Args: o.Args, Tty: o.TTY,
		Rows: uint32(o.Size.Rows), Cols: uint32(o.Size.Cols), Term: o.Term}
	select {
	case s.shellOpens <- req:
	default:
		sh.end(&ShellExit{Refused: true, Reason: "too many processes being started in the job; try again"})
		return
	}
	go func() {
		select {
		case <-sh.done:
		case <-time.After(shellOpenTimeout):
			if sh.claimJoin(false) {
				sh.end(&ShellExit{Refused: true, Reason: "the execute machine did not start the process within " + shellOpenTimeout.String()})
			}
		}
	}()
}

// shellCommand passes the agent's command c on to its process.
func (s *Shadow) shellCommand(c *ShellCommand) {
	if c.Open != nil {
		s.openShell(c)
		return
	}
	sh := s.shells.get(c.Session)
	if sh == nil {
		return // ended already
	}
	switch {
	case c.Close:
		sh.end(nil)
	case c.Acked > 0:
		for range min(c.Acked, ShellWindow) {
			select {
			case sh.credits <- struct{}{}:
			default:
			}
		}
	case len(c.Input) > ShellChunk:
		sh.end(&ShellExit{Signal: 9, Reason: fmt.Sprintf("%d bytes of input in one message, over %d", len(c.Input), ShellChunk)})
	default:
		var req *wire.ShellRequest
		switch {
		case c.Resize != nil:
			req = &wire.ShellRequest{Body: &wire.ShellRequest_Resize{Resize: &wire.ShellResize{Rows: uint32(c.Resize.Rows), Cols: uint32(c.Resize.Cols)}}}
		default:
			req = &wire.ShellRequest{Body: &wire.ShellRequest_Input{Input: &wire.ShellInput{Data: c.Input, Eof: c.EOF}}}
		}
		select {
		case sh.in <- req:
		default:
			// The agent sent beyond its window.
			sh.end(&ShellExit{Signal: 9, Reason: "the process's input overran its window"})
		}
	}
}

func (t *shells) get(id uint64) *shell {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// closeAll ends every process still open with reason, and refuses any
// later one: the job's run is over.
func (t *shells) closeAll(reason string) {
	t.mu.Lock()
	t.closed = true
	open := make([]*shell, 0, len(t.byID))
	for _, sh := range t.byID {
		open = append(open, sh)
	}
	t.mu.Unlock()
	for _, sh := range open {
		sh.end(&ShellExit{Signal: 9, Reason: reason})
	}
}

// claimJoin reports whether the starter's stream may join the shell now
// (join) or the shell may be given up before it did (!join): one or the
// other, once.
func (sh *shell) claimJoin(join bool) bool {
	sh.table.mu.Lock()
	defer sh.table.mu.Unlock()
	if sh.joined || sh.table.byID[sh.id] != sh {
		return false
	}
	sh.joined = join
	return true
}

// end ends the shell once, reporting x to the agent unless nil (the
// agent closed it).
func (sh *shell) end(x *ShellExit) {
	sh.endOnce.Do(func() {
		sh.table.mu.Lock()
		if sh.table.byID[sh.id] == sh {
			delete(sh.table.byID, sh.id)
		}
		sh.table.mu.Unlock()
		close(sh.done)
		if x != nil {
			sh.events(Event{Type: EventShell, Shell: &ShellEvent{Session: sh.id, Exited: x}})
		}
	})
}

// Shell joins the starter's stream of a process to the agent's session
// with it: its output goes to the agent as the agent takes it, and the
// agent's input to the process.
func (v *service) Shell(stream wire.Shadow_ShellServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	hello := first.GetHello()
	if hello == nil || !v.s.checkSecret(hello.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	sh := v.s.shells.get(hello.Session)
	if sh == nil || !sh.claimJoin(true) {
		return status.Error(codes.NotFound, "no such process is waiting")
	}
	go sh.fromStarter(stream)
	for {
		select {
		case req := <-sh.in:
			if err := stream.Send(req); err != nil {
				sh.end(&ShellExit{Signal: 9, Reason: "lost the execute machine: " + err.Error()})
				return nil
			}
			sh.events(Event{Type: EventShell, Shell: &ShellEvent{Session: sh.id, Acked: 1}})
		case <-sh.done:
			// Returning ends the stream: a process still running is
			// killed by its starter.
			return nil
		}
	}
}

// fromStarter passes the process's output to the agent, as the agent
// takes it, then its end.
func (sh *shell) fromStarter(stream wire.Shadow_ShellServer) {
	for {
		m, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the starter ended the process's stream without its exit")
			}
			sh.end(&ShellExit{Signal: 9, Reason: "lost the execute machine: " + err.Error()})
			return
		}
		switch b := m.Body.(type) {
		case *wire.ShellReply_Output:
			if len(b.Output.Data) > ShellChunk {
				sh.end(&ShellExit{Signal: 9, Reason: fmt.Sprintf("the starter sent %d bytes in one message", len(b.Output.Data))})
				return
			}
			select {
			case <-sh.credits:
			case <-sh.done:
				return
			}
			sh.events(Event{Type: EventShell, Shell: &ShellEvent{Session: sh.id, Fd: int(b.Output.Fd), Data: b.Output.Data}})
		case *wire.ShellReply_Started:
			sh.events(Event{Type: EventShell, Shell: &ShellEvent{Session: sh.id, Started: true}})
		case *wire.ShellReply_Exited:
			x := b.Exited
			sh.end(&ShellExit{Code: int(x.ExitCode), Signal: int(x.Signal), Refused: x.Refused, Reason: x.Reason})
			return
		}
	}
}

// ShellEndReason says, for the processes started in a job, why the job's
// run ended with ev.
func ShellEndReason(ev Event) string {
	switch ev.Type {
	case EventExited:
		return "the job exited"
	case EventEvicted:
		return "the job was evicted: " + ev.Reason
	case EventKilled:
		return "the job was stopped: " + ev.Reason
	case EventHold:
		return "the job was held: " + ev.Reason
	default:
		return "the job's run ended: " + ev.Reason
	}
}

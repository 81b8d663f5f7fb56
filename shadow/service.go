package shadow

import (
	"errors"
	"io"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// service implements wire.ShadowServer for one shadow.
type service struct {
	wire.UnimplementedShadowServer
	s *Shadow
}

// Attach runs the starter's session: Hello, then the job spec, then output
// and status until the job has exited.
func (v *service) Attach(stream wire.Shadow_AttachServer) error {
	s := v.s
	hello, err := v.admit(stream)
	if err != nil {
		return err
	}
	// A job restored from a checkpoint goes on writing where it was; one
	// whose restore fails starts afresh, and the starter's Started says
	// which (see handle). A starter that attaches again carries on.
	ckpts, _ := s.job.EvalInt("NumCkpts")
	sess := &session{s: s, host: hello.Host, appending: ckpts > 0 || hello.Reconnect, killed: make(chan string, 1)}
	if hello.Reconnect {
		s.events(Event{Type: EventReconnected, Host: hello.Host})
	}
	if sess.out, err = s.files.openOutputs(sess.appending); err != nil {
		s.finish(Event{Type: EventHold, Reason: err.Error(), Code: holdCodeOutput})
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	defer sess.out.close()
	// The shadow runs as the job's owner, whose files are then its own.
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	job := &wire.JobSpec{JobAd: s.spec.JobAd, OwnerUid: &uid, OwnerGid: &gid}
	if err := stream.Send(&wire.ShadowMessage{Body: &wire.ShadowMessage_Job{Job: job}}); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go sess.relay(stream, stop)
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A starter that ends its side on purpose is not coming back.
				s.finish(Event{Type: EventFailed, Reason: "lost the starter: starter closed the session before the job exited"})
				return nil
			}
			if !s.loseStarter(err.Error()) {
				s.finish(Event{Type: EventFailed, Reason: "lost the starter: " + err.Error()})
			}
			return nil
		}
		if sess.handle(msg) {
			return nil
		}
	}
}

// admit reads the starter's Hello and lets one starter, the one holding
// the job's secret, attach while the job is still wanted; and lets it
// attach again after the two lost each other, within the job's lease.
func (v *service) admit(stream wire.Shadow_AttachServer) (*wire.Hello, error) {
	s := v.s
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	hello := first.GetHello()
	if hello == nil || hello.JobId != s.jobID || !s.checkSecret(hello.Secret) {
		return nil, status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return nil, status.Error(codes.FailedPrecondition, "the job was stopped while its starter was not attached")
	}
	if s.attached {
		// A starter that lost its session may find this shadow not yet
		// aware of it; it tries again.
		return nil, status.Error(codes.AlreadyExists, "a starter is already attached")
	}
	switch {
	case hello.Reconnect && s.lostAt.IsZero():
		return nil, status.Error(codes.FailedPrecondition, "no starter of this job was lost")
	case !hello.Reconnect && !s.attachedAt.IsZero():
		return nil, status.Error(codes.FailedPrecondition, "the job already started")
	}
	s.attached, s.lostAt, s.host = true, time.Time{}, hello.Host
	if s.attachedAt.IsZero() {
		s.attachedAt = time.Now()
	}
	return hello, nil
}

// session is one starter's session with the shadow, from its job spec to
// the job's exit.
type session struct {
	s         *Shadow
	host      string
	appending bool // the job was checkpointed: its output continues
	out       *outputs
	// killed carries the reason of a kill passed on to the starter, so
	// that the job's exit is reported as killed.
	killed chan string
}

// relay passes the agent's commands to the starter until stop closes:
// a kill (after which nothing more is passed), a checkpoint, a suspend or
// continue, or a process to start in the job.
func (x *session) relay(stream wire.Shadow_AttachServer, stop <-chan struct{}) {
	for {
		select {
		case k := <-x.s.kill:
			x.killed <- k.reason
			_ = stream.Send(&wire.ShadowMessage{Body: &wire.ShadowMessage_Kill{Kill: &wire.Kill{Reason: k.reason, Fast: k.fast}}})
			return
		case vacate := <-x.s.ckpt:
			_ = stream.Send(&wire.ShadowMessage{Body: &wire.ShadowMessage_Checkpoint{Checkpoint: &wire.CheckpointNow{Vacate: vacate}}})
		case resume := <-x.s.suspend:
			_ = stream.Send(&wire.ShadowMessage{Body: &wire.ShadowMessage_Suspend{Suspend: &wire.SuspendNow{Resume: resume}}})
		case open := <-x.s.shellOpens:
			_ = stream.Send(&wire.ShadowMessage{Body: &wire.ShadowMessage_Shell{Shell: open}})
		case <-stop:
			return
		}
	}
}

// handle takes one message from the starter; it reports whether it was
// the job's last.
func (x *session) handle(msg *wire.StarterMessage) bool {
	s := x.s
	switch b := msg.Body.(type) {
	case *wire.StarterMessage_Output:
		if err := x.out.write(int(b.Output.Fd), b.Output.Data); err != nil {
			s.logger.Warn("write job output", "err", err)
		}
	case *wire.StarterMessage_Started:
		// The job's first output follows this message: a job that starts
		// afresh after a failed restore writes its output anew, not after
		// the lines its previous run wrote.
		switch {
		case x.appending && !b.Started.Restored:
			if err := x.out.truncate(); err != nil {
				s.logger.Warn("truncate job output for a fresh start", "err", err)
			}
		case b.Started.Restored:
			if err := s.rollBackOutput(x.out); err != nil {
				s.logger.Warn("cut the job's output back to its checkpoint", "err", err)
			}
		}
		if base, err := x.out.base(); err != nil {
			s.logger.Warn("the job's output files", "err", err)
		} else {
			s.mu.Lock()
			s.outBase = base
			s.mu.Unlock()
		}
		s.events(Event{Type: EventExecuting, Host: x.host, RestoreSeconds: b.Started.RestoreSeconds,
			Restored: b.Started.Restored, RestoreFailure: b.Started.RestoreFailure})
	case *wire.StarterMessage_CheckpointFailed:
		s.events(Event{Type: EventCheckpointFailed, Reason: b.CheckpointFailed.Reason, Vacate: b.CheckpointFailed.Vacate})
	case *wire.StarterMessage_Usage:
		u := b.Usage
		s.events(Event{Type: EventUsage, UserCPU: u.UserCpuSeconds, SysCPU: u.SysCpuSeconds, MaxRSS: u.MaxRssBytes, Memory: u.MemoryBytes})
	case *wire.StarterMessage_Suspended:
		s.events(Event{Type: EventSuspended, Reason: b.Suspended.Reason})
	case *wire.StarterMessage_Resumed:
		s.events(Event{Type: EventResumed})
	case *wire.StarterMessage_Exited:
		if err := x.out.close(); err != nil {
			s.logger.Warn("close job output", "err", err)
		}
		killed := ""
		select {
		case killed = <-x.killed:
		default:
		}
		s.finish(exitEvent(b.Exited, killed))
		return true
	}
	return false
}

func exitEvent(x *wire.Exited, killed string) Event {
	if x.HoldReason != "" {
		return Event{Type: EventHold, Reason: x.HoldReason, Code: int(x.HoldCode)}
	}
	ev := Event{Type: EventExited, BySignal: x.BySignal, ExitCode: int(x.ExitCode), Signal: int(x.Signal)}
	if u := x.Usage; u != nil {
		ev.UserCPU, ev.SysCPU, ev.MaxRSS = u.UserCpuSeconds, u.SysCpuSeconds, u.MaxRssBytes
	}
	switch {
	case killed != "":
		ev.Type, ev.Reason = EventKilled, killed
	case x.Evicted:
		ev.Type, ev.Reason = EventEvicted, x.EvictReason
	}
	return ev
}

// ReadFile streams the job's executable or input from the submit machine.
func (v *service) ReadFile(req *wire.ReadFileRequest, stream wire.Shadow_ReadFileServer) error {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	path, err := s.files.readable(req.Name)
	if err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	f, err := os.Open(path)
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if !st.Mode().IsRegular() {
		return status.Errorf(codes.FailedPrecondition, "%s is not a regular file", path)
	}
	buf := make([]byte, 256<<10)
	mode := uint32(st.Mode().Perm())
	sent := false
	for {
		n, err := f.Read(buf)
		if n > 0 || (!sent && errors.Is(err, io.EOF)) {
			if serr := stream.Send(&wire.FileChunk{Data: buf[:n], Mode: mode}); serr != nil {
				return serr
			}
			sent = true
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
	}
}

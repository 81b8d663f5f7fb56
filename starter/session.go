package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// A job's session with its shadow may be lost while the job runs on: a
// network outage, or the submit machine out of reach for a while. A job
// with a lease (job_lease_duration, JobLeaseDuration) keeps running for
// that long while the starter attaches to its shadow again, as HTCondor's
// jobs reconnect; what it sends home in the meantime waits. A job
// without one is stopped when its session is lost.

// jobLease reads the job's lease.
func jobLease(job *classad.ClassAd) time.Duration {
	secs, _ := job.EvalInt("JobLeaseDuration")
	return time.Duration(max(secs, 0)) * time.Second
}

// How long one attempt to attach again may take, and the longest pause
// between attempts.
const (
	reattachTimeout  = 15 * time.Second
	reattachMaxDelay = 5 * time.Second
)

// maxPendingNotes bounds the notes (suspensions, failed checkpoints) kept
// for the shadow while the session is lost; the oldest go first.
const maxPendingNotes = 32

// sender carries the starter's messages to the shadow over the session
// stream, serialising sends as gRPC requires, across the session's loss
// and reattachment. Messages the job's record needs (its start, its
// output, its exit) wait for the session to be back; notes are kept
// (bounded) or, for usage, dropped while it is lost.
type sender struct {
	lease time.Duration

	mu      sync.Mutex
	stream  wire.Shadow_AttachClient
	lost    bool
	up      chan struct{} // closed when a lost session is back, or given up
	failed  error         // the session is lost for good
	pending []*wire.StarterMessage
	exit    *wire.StarterMessage // the job's exit, once sent
}

func newSender(stream wire.Shadow_AttachClient, lease time.Duration) *sender {
	return &sender{stream: stream, lease: lease}
}

// msg sends m, waiting for a lost session to be back.
func (s *sender) msg(m *wire.StarterMessage) error {
	for {
		s.mu.Lock()
		if s.failed != nil {
			s.mu.Unlock()
			return s.failed
		}
		if !s.lost {
			err := s.stream.Send(m)
			if err == nil || s.lease <= 0 {
				s.mu.Unlock()
				return err
			}
			s.loseLocked()
		}
		up := s.up
		s.mu.Unlock()
		<-up
	}
}

// note sends m if the session is up; while it is lost, usage is dropped
// (the next report supersedes it) and other notes wait.
func (s *sender) note(m *wire.StarterMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return
	}
	if !s.lost {
		if err := s.stream.Send(m); err == nil || s.lease <= 0 {
			return
		}
		s.loseLocked()
	}
	if m.GetUsage() != nil {
		return
	}
	if len(s.pending) == maxPendingNotes {
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, m)
}

// sendExit sends the job's exit and ends the starter's side of the
// session. If the session is lost before the shadow ends it, the exit is
// sent again on the next one.
func (s *sender) sendExit(m *wire.StarterMessage) error {
	s.mu.Lock()
	s.exit = m
	s.mu.Unlock()
	if err := s.msg(m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lost {
		_ = s.stream.CloseSend()
	}
	return nil
}

// exitSent reports whether the job's exit was sent.
func (s *sender) exitSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exit != nil
}

// waitUp waits while the session is lost; it fails once it is lost for
// good.
func (s *sender) waitUp(ctx context.Context) error {
	s.mu.Lock()
	up, lost, failed := s.up, s.lost, s.failed
	s.mu.Unlock()
	if failed != nil {
		return failed
	}
	if !lost {
		return nil
	}
	select {
	case <-up:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// lose marks the session lost.
func (s *sender) lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseLocked()
}

func (s *sender) loseLocked() {
	if !s.lost && s.failed == nil {
		s.lost, s.up = true, make(chan struct{})
	}
}

// resume carries on over a new session: the notes kept while it was
// lost go first, then the exit if it was sent and the shadow may not have
// had it; waiting messages follow.
func (s *sender) resume(stream wire.Shadow_AttachClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream = stream
	for _, m := range s.pending {
		_ = stream.Send(m)
	}
	s.pending = nil
	if s.exit != nil {
		_ = stream.Send(s.exit)
		_ = stream.CloseSend()
	}
	if s.lost {
		s.lost = false
		close(s.up)
	}
}

// fail gives the session up: whatever waits to be sent fails with err.
func (s *sender) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return
	}
	s.failed = err
	if s.lost {
		close(s.up)
	}
}

// reattach attaches to the job's shadow again after the session was lost,
// trying until the job's lease runs out, and reports whether it did; the
// sender then carries on over the new session. A shadow that no longer
// wants the job (it was removed meanwhile, or the lease ran out on its
// side) turns the starter away at once.
func (s *Starter) reattach(ctx context.Context, client wire.ShadowClient, jobID string, send *sender, logger *slog.Logger) (wire.Shadow_AttachClient, error) {
	send.lose()
	deadline := time.Now().Add(send.lease)
	delay := 250 * time.Millisecond
	for {
		stream, err := s.attachAgain(ctx, client, jobID)
		if err == nil {
			send.resume(stream)
			return stream, nil
		}
		switch status.Code(err) {
		case codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound:
			return nil, fmt.Errorf("the shadow turned the job away: %w", err)
		}
		logger.Debug("attach to the shadow again", "err", err)
		wait := min(delay, time.Until(deadline))
		if wait <= 0 {
			return nil, fmt.Errorf("job lease of %v expired: %w", send.lease, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		delay = min(2*delay, reattachMaxDelay)
	}
}

// attachAgain makes one attempt to attach as the job's starter once more.
// The attempt is bounded; the session it opens lives as long as ctx.
func (s *Starter) attachAgain(ctx context.Context, client wire.ShadowClient, jobID string) (wire.Shadow_AttachClient, error) {
	actx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(reattachTimeout, cancel)
	stream, err := client.Attach(actx)
	if err == nil {
		err = stream.Send(&wire.StarterMessage{Body: &wire.StarterMessage_Hello{Hello: &wire.Hello{
			JobId: jobID, Secret: s.spec.Secret, Host: s.spec.Host, Reconnect: true}}})
	}
	if err == nil {
		// The shadow sends the job first, as to any starter; this one has it.
		var first *wire.ShadowMessage
		if first, err = stream.Recv(); err == nil && first.GetJob() == nil {
			err = errors.New("shadow did not send the job first")
		}
	}
	if !timer.Stop() && err == nil {
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return nil, err
	}
	// The session's context ends with ctx; cancel is kept by it.
	context.AfterFunc(ctx, cancel)
	return stream, nil
}

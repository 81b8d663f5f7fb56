// Package shadow is the submit-side representative of one running job.
//
// The agent starts one shadow process per claim it holds and gives it the
// claim's jobs one at a time (see Serve), as HTCondor's schedd reuses its
// shadows: only the first job pays for the process, its TLS set-up and its
// connection to the startd. For each job the shadow activates the claim at
// the startd, then serves the job's starter over mutual TLS: it hands over
// the job description, streams the executable and input from the submit
// machine, and writes the job's output to the user's files. A first run
// truncates those files, as does a run that starts afresh because its
// checkpoint could not be restored; a job restored from its checkpoint
// appends to them, going on where it was. The shadow runs as the jobs'
// owner, so the operating system limits what a job can reach on the submit
// machine to what its owner may touch.
package shadow

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
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

// How long the shadow waits for its starter to connect after activating the
// claim before it gives up on this run.
const attachTimeout = 60 * time.Second

// Shadow serves one job.
type Shadow struct {
	link   *claimLink
	spec   *Spec
	job    *classad.ClassAd
	jobID  string
	secret string
	logger *slog.Logger
	events func(Event) // reports to the agent

	files *jobFiles

	mu       sync.Mutex
	attached bool
	kill     chan string // a reason; buffered 1
	ckpt     chan bool   // a checkpoint request (true: vacate); buffered 1
	done     chan Event  // the final event of the run
}

// newShadow prepares a shadow for the job in spec, reaching its startd
// through link. events receives what the agent must know, in order; it is
// called from the shadow's goroutines one at a time.
func newShadow(link *claimLink, spec *Spec, logger *slog.Logger, events func(Event)) (*Shadow, error) {
	job, err := classad.Parse(spec.JobAd)
	if err != nil {
		return nil, fmt.Errorf("shadow: parse job ad: %w", err)
	}
	cluster, _ := job.EvalInt("ClusterId")
	proc, _ := job.EvalInt("ProcId")
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("shadow: make job secret: %w", err)
	}
	files, err := newJobFiles(job)
	if err != nil {
		return nil, err
	}
	return &Shadow{
		link:   link,
		spec:   spec,
		job:    job,
		jobID:  fmt.Sprintf("%d.%d", cluster, proc),
		secret: hex.EncodeToString(secret),
		logger: logger.With("job", fmt.Sprintf("%d.%d", cluster, proc)),
		events: events,
		files:  files,
		kill:   make(chan string, 1),
		ckpt:   make(chan bool, 1),
		done:   make(chan Event, 1),
	}, nil
}

// Kill asks the running job to stop; Run then reports EventKilled.
func (s *Shadow) Kill(reason string) {
	select {
	case s.kill <- reason:
	default:
	}
}

// Checkpoint asks the running job's starter for a checkpoint; with vacate
// the job stops after it and is reported evicted.
func (s *Shadow) Checkpoint(vacate bool) {
	select {
	case s.ckpt <- vacate:
	default:
	}
}

// Run activates the claim, serves the starter on the link's server until
// the job ends, and reports the outcome through events; the final event
// carries the run's remote I/O statistics.
func (s *Shadow) Run(ctx context.Context) {
	io := newJobIOServer(s)
	io.lendFrom(s.link.buffers)
	s.link.current.Store(&jobServer{shadow: &service{s: s}, io: io})
	defer func() {
		s.link.current.Store(nil)
		io.CloseFiles()
	}()
	final := func(ev Event) {
		ev.Files = io.Stats()
		s.events(ev)
	}
	if err := s.activate(ctx, s.link.addr); err != nil {
		s.events(Event{Type: EventFailed, Reason: err.Error()})
		return
	}

	timer := time.NewTimer(attachTimeout)
	defer timer.Stop()
	select {
	case ev := <-s.done:
		final(ev)
	case <-timer.C:
		s.mu.Lock()
		attached := s.attached
		s.mu.Unlock()
		if attached {
			// The starter is working; wait for the end without a deadline.
			select {
			case ev := <-s.done:
				final(ev)
			case <-ctx.Done():
				s.events(Event{Type: EventFailed, Reason: "shadow stopped"})
			}
			return
		}
		s.events(Event{Type: EventFailed, Reason: "starter did not connect within " + attachTimeout.String()})
	case <-ctx.Done():
		s.events(Event{Type: EventFailed, Reason: "shadow stopped"})
	}
}

func (s *Shadow) activate(ctx context.Context, addr string) error {
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	req := &wire.ActivateClaimRequest{ClaimId: s.spec.ClaimID, JobAd: s.spec.JobAd, ShadowAddr: addr, Secret: s.secret}
	var err error
	// On a reused claim the startd may not yet have seen the previous
	// job's starter exit: the slot is still busy for a moment.
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		_, err = wire.NewStartdClient(s.link.startd).ActivateClaim(cctx, req)
		if status.Code(err) != codes.FailedPrecondition {
			break
		}
		select {
		case <-cctx.Done():
		case <-time.After(delay):
			continue
		}
		break
	}
	if err != nil {
		return fmt.Errorf("activate claim at %s: %w", s.spec.StartdAddr, err)
	}
	return nil
}

// checkSecret reports whether a starter presented this job's secret.
func (s *Shadow) checkSecret(secret string) bool {
	return subtle.ConstantTimeCompare([]byte(secret), []byte(s.secret)) == 1
}

// finish records the final event of the run once.
func (s *Shadow) finish(ev Event) {
	select {
	case s.done <- ev:
	default:
	}
}

var errBadSecret = errors.New("unknown job or wrong secret")

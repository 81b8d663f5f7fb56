// Package shadow is the submit-side representative of one running job.
//
// The agent starts one shadow process per claim it holds and gives it the
// claim's jobs one at a time (see ServeClaim), as HTCondor's schedd reuses its
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
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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

	// lease is the job's JobLeaseDuration: how long the job runs on
	// after its starter and this shadow lost each other, for the starter
	// to attach again. Zero: a lost starter ends the run.
	lease time.Duration

	mu         sync.Mutex
	attached   bool
	attachedAt time.Time   // when the starter first attached
	host       string      // the execute machine, as the starter named it
	lostAt     time.Time   // when the attached starter was lost; zero while attached
	gone       bool        // killed while no starter was attached, or the lease ran out
	lost       chan string // a lost starter, within the lease; buffered 1
	kill       chan kill   // buffered 1
	abandon    chan string // a Kill before any starter attached; buffered 1
	ckpt       chan bool   // a checkpoint request (true: vacate); buffered 1
	suspend    chan bool   // the owner's suspend (false) and continue (true), in order
	done       chan Event  // the final event of the run
	// outBase is how long the output files were when the job started:
	// a checkpoint's count of its output is from there (nil: this
	// shadow did not see the job start).
	outBase *outputBase

	// shells are the processes started in the job for its owner;
	// shellOpens carries the requests for new ones to the starter.
	shells     shells
	shellOpens chan *wire.ShellOpen
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
	var files *jobFiles
	if isSpooled(job) {
		files, err = spooledJobFiles(job, spec)
	} else {
		files, err = newJobFiles(job)
	}
	if err != nil {
		return nil, err
	}
	leaseSecs, _ := job.EvalInt("JobLeaseDuration")
	return &Shadow{
		lease:   time.Duration(max(leaseSecs, 0)) * time.Second,
		lost:    make(chan string, 1),
		link:    link,
		spec:    spec,
		job:     job,
		jobID:   fmt.Sprintf("%d.%d", cluster, proc),
		secret:  spec.Secret,
		logger:  logger.With("job", fmt.Sprintf("%d.%d", cluster, proc)),
		events:  events,
		files:   files,
		kill:    make(chan kill, 1),
		abandon: make(chan string, 1),
		ckpt:    make(chan bool, 1),
		suspend: make(chan bool, 8),
		done:    make(chan Event, 1),
		// A few opens wait for the starter; more are refused.
		shellOpens: make(chan *wire.ShellOpen, 4),
	}, nil
}

// kill is a request to stop the job: why, and whether at once (SIGKILL)
// rather than with its kill signal and grace time.
type kill struct {
	reason string
	fast   bool
}

// Kill asks the running job to stop, with its kill signal and grace time,
// or at once if fast; Run then reports EventKilled. While no starter is
// attached (before the first, or while a lost one may come back) there is
// no one to tell: Run ends with EventFailed and reason, and a starter that
// comes later is turned away, which stops the job.
func (s *Shadow) Kill(reason string, fast bool) {
	s.mu.Lock()
	attached := s.attached
	if !attached {
		s.gone = true
	}
	s.mu.Unlock()
	if !attached {
		select {
		case s.abandon <- reason:
		default:
		}
		return
	}
	select {
	case s.kill <- kill{reason: reason, fast: fast}:
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

// Suspend passes on the owner's request to stop the job's processes where
// they are, or with resume to let them run on.
func (s *Shadow) Suspend(resume bool) {
	select {
	case s.suspend <- resume:
	default:
		s.logger.Warn("too many suspend and continue requests at once; dropping one", "resume", resume)
	}
}

// Run reports EventReady (the agent then activates the claim, sending the
// starter here), serves the starter on the link's server until the job
// ends, and reports the outcome through events; the final event carries
// the run's remote I/O statistics. A Kill that comes before the starter
// has attached ends the run at once with EventFailed: the claim could not
// be activated, or the agent no longer wants the job run.
func (s *Shadow) Run(ctx context.Context) {
	io := newJobIOServer(s)
	io.lendFrom(s.link.buffers)
	s.link.current.Store(&jobServer{shadow: &service{s: s}, io: io})
	defer func() {
		s.link.current.Store(nil)
		io.CloseFiles()
	}()
	final := func(ev Event) {
		// The job's processes end with it, and say why before the job's
		// end is reported; from then on nothing of the job is served
		// (its claim's next job is another run's).
		s.shells.closeAll(ShellEndReason(ev))
		s.link.current.Store(nil)
		ev.Files = io.Stats()
		s.events(ev)
	}
	s.events(Event{Type: EventReady, Addr: s.link.addr, Fingerprint: s.link.fingerprint})

	timer := time.NewTimer(attachTimeout)
	defer timer.Stop()
	var leaseEnd <-chan time.Time
	for {
		select {
		case ev := <-s.done:
			final(ev)
			return
		case reason := <-s.abandon:
			final(Event{Type: EventFailed, Reason: reason})
			return
		case <-timer.C:
			if s.attachTime().IsZero() {
				final(Event{Type: EventFailed, Reason: "starter did not connect within " + attachTimeout.String()})
				return
			}
			// The starter is working; wait for the end without a deadline.
		case reason := <-s.lost:
			s.events(Event{Type: EventDisconnected, Host: s.hostName(), Reason: reason})
			leaseEnd = time.After(s.lease)
		case <-leaseEnd:
			leaseEnd = nil
			if s.expireLease() {
				reason := fmt.Sprintf("job lease of %v expired", s.lease)
				s.events(Event{Type: EventReconnectFailed, Host: s.hostName(), Reason: reason})
				final(Event{Type: EventFailed, Reason: "lost the starter: " + reason})
				return
			}
		case <-ctx.Done():
			final(Event{Type: EventFailed, Reason: "shadow stopped"})
			return
		}
	}
}

// attachTime is when the job's starter attached: the job's run began.
func (s *Shadow) attachTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attachedAt
}

func (s *Shadow) isAttached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached
}

func (s *Shadow) hostName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host
}

// loseStarter records that the attached starter was lost, and reports
// whether the job runs on within its lease for the starter to come back:
// if not, the run fails now.
func (s *Shadow) loseStarter(reason string) bool {
	if s.lease <= 0 {
		return false
	}
	s.mu.Lock()
	s.attached, s.lostAt = false, time.Now()
	s.mu.Unlock()
	s.logger.Warn("lost the starter; waiting for it within the job lease", "lease", s.lease, "err", reason)
	select {
	case s.lost <- reason:
	default:
	}
	return true
}

// expireLease ends the wait for a lost starter when the lease ran out
// before it came back, and reports whether it did: a starter that comes
// later is turned away (and stops the job).
func (s *Shadow) expireLease() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached || s.lostAt.IsZero() || time.Since(s.lostAt) < s.lease {
		return false
	}
	s.gone = true
	return true
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

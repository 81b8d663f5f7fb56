package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/wire"
)

// Limits bound what each local user may ask of the agent, so that no user
// can stop it serving the others: every local user may reach its socket.
// A request beyond a limit is refused, naming the configuration key that
// sets it; nothing of it is queued. Zero fields take the defaults.
type Limits struct {
	// MaxJobsPerOwner bounds one owner's jobs in the queue, counting
	// those a late-materialization factory has yet to make
	// (MAX_JOBS_PER_OWNER, as HTCondor's).
	MaxJobsPerOwner int
	// MaxJobsSubmitted bounds the jobs in the queue, all owners'
	// together (MAX_JOBS_SUBMITTED, as HTCondor's).
	MaxJobsSubmitted int
	// MaxJobsPerSubmission bounds the jobs of one submission
	// (MAX_JOBS_PER_SUBMISSION, as HTCondor's).
	MaxJobsPerSubmission int
	// MaxAdBytes bounds each ad of a submission as sent: the cluster ad
	// and each job's own (MAX_JOB_AD_BYTES).
	MaxAdBytes int
	// MaxSubmissionBytes bounds one submission, all its ads together
	// (MAX_SUBMISSION_BYTES). The local socket takes no larger message:
	// the answers that grow with the queue are streamed.
	MaxSubmissionBytes int
	// SubmitRate bounds each user's submissions per second: their
	// NewCluster calls and their Submit calls each, with bursts of as
	// many (MAX_SUBMISSIONS_PER_SECOND). It is enforced before a request
	// is read.
	SubmitRate int
}

// DefaultLimits returns the limits of a configuration that sets none.
func DefaultLimits() Limits {
	return Limits{
		MaxJobsPerOwner:      100_000,
		MaxJobsSubmitted:     500_000,
		MaxJobsPerSubmission: 100_000,
		MaxAdBytes:           64 << 10,
		MaxSubmissionBytes:   64 << 20,
		SubmitRate:           10,
	}
}

// withDefaults fills in zero fields and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxJobsPerOwner, d.MaxJobsPerOwner}, {&l.MaxJobsSubmitted, d.MaxJobsSubmitted},
		{&l.MaxJobsPerSubmission, d.MaxJobsPerSubmission}, {&l.MaxAdBytes, d.MaxAdBytes},
		{&l.MaxSubmissionBytes, d.MaxSubmissionBytes}, {&l.SubmitRate, d.SubmitRate},
	} {
		switch {
		case *f.v < 0:
			return l, fmt.Errorf("agent: negative limit %d", *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return l, nil
}

// recvLimit is the largest message the local socket takes: a submission
// of MaxSubmissionBytes, plus room for the message's own framing, so that
// one a little too large still reaches Submit and is refused by name.
func (l Limits) recvLimit() int { return l.MaxSubmissionBytes + 1<<20 }

// limitError refuses a request beyond a limit, naming its key.
func limitError(key string, limit int, format string, args ...any) error {
	return status.Errorf(codes.ResourceExhausted, "%s: the limit is %d (%s)", fmt.Sprintf(format, args...), limit, key)
}

// checkSubmission applies the limits that a submission's own size decides.
func (l *Limits) checkSubmission(req *wire.SubmitRequest, size int) error {
	if size > l.MaxSubmissionBytes {
		return limitError("MAX_SUBMISSION_BYTES", l.MaxSubmissionBytes, "submission of %d bytes", size)
	}
	if n := len(req.Ads); n > l.MaxJobsPerSubmission {
		return limitError("MAX_JOBS_PER_SUBMISSION", l.MaxJobsPerSubmission, "submission of %d jobs", n)
	}
	if n := len(req.ClusterAd); n > l.MaxAdBytes {
		return limitError("MAX_JOB_AD_BYTES", l.MaxAdBytes, "cluster ad of %d bytes", n)
	}
	for i, ad := range req.Ads {
		if len(ad) > l.MaxAdBytes {
			return limitError("MAX_JOB_AD_BYTES", l.MaxAdBytes, "ad of job %d: %d bytes", i, len(ad))
		}
	}
	return nil
}

// checkClusters checks a submission of several clusters as one: its size,
// its jobs together, and each cluster's ads.
func (l *Limits) checkClusters(req *wire.SubmitClustersRequest, size int) error {
	if size > l.MaxSubmissionBytes {
		return limitError("MAX_SUBMISSION_BYTES", l.MaxSubmissionBytes, "submission of %d bytes", size)
	}
	jobs := 0
	for _, c := range req.Clusters {
		jobs += len(c.Ads)
	}
	if jobs > l.MaxJobsPerSubmission {
		return limitError("MAX_JOBS_PER_SUBMISSION", l.MaxJobsPerSubmission, "submission of %d jobs in %d clusters", jobs, len(req.Clusters))
	}
	for _, c := range req.Clusters {
		// Each within the bytes already; what is left are the ads' sizes.
		if err := l.checkSubmission(c, 0); err != nil {
			return err
		}
	}
	return nil
}

// quota counts the jobs in the queue by owner, for the job limits. A
// submission takes its share before it commits (and gives it back if the
// commit fails), a retirement gives one back, and recover counts the
// queue once: jobs leave the queue only by retirement.
type quota struct {
	mu     sync.Mutex
	owners map[string]int
	total  int
}

// count adds the queue entry ad to the counts: a job, or a factory's jobs
// still to be made.
func (q *quota) count(id jobqueue.JobID, ad *classad.ClassAd) {
	n := 1
	if !isJob(id) {
		total, _ := ad.EvalInt(AttrTotalSubmitProcs)
		next, _ := ad.EvalInt(AttrJobMaterializeNextProcID)
		n = int(max(total-next, 0))
	}
	owner, _ := ad.EvalString(AttrOwner)
	q.mu.Lock()
	if q.owners == nil {
		q.owners = map[string]int{}
	}
	q.owners[owner] += n
	q.total += n
	q.mu.Unlock()
}

// take reserves room for n jobs of owner, or says which limit forbids it.
func (q *quota) take(l *Limits, owner string, n int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if have := q.owners[owner]; have+n > l.MaxJobsPerOwner {
		return limitError("MAX_JOBS_PER_OWNER", l.MaxJobsPerOwner, "%s has %d jobs in the queue and submits %d more", owner, have, n)
	}
	if q.total+n > l.MaxJobsSubmitted {
		return limitError("MAX_JOBS_SUBMITTED", l.MaxJobsSubmitted, "the queue holds %d jobs and %d more are submitted", q.total, n)
	}
	if q.owners == nil {
		q.owners = map[string]int{}
	}
	q.owners[owner] += n
	q.total += n
	return nil
}

// give returns room for n jobs of owner.
func (q *quota) give(owner string, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.owners[owner] -= n; q.owners[owner] <= 0 {
		delete(q.owners, owner)
	}
	q.total -= n
}

// rateLimiter is a token bucket per user and method: rate tokens a second,
// as many at most.
type rateLimiter struct {
	mu      sync.Mutex
	rate    float64             // guarded by mu
	buckets map[rateKey]*bucket // guarded by mu; one per local uid and method: bounded
}

// setRate makes the buckets fill at rate tokens a second from now on.
func (r *rateLimiter) setRate(rate int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rate = float64(rate)
}

type rateKey struct {
	uid    uint32
	method string
	// scheduler marks calls from a scheduler universe job's process (a
	// DAG's harrier dagman), which submits a DAG's nodes for its user and
	// gets a bucket of its own, schedulerRateFactor times as large.
	scheduler bool
}

// schedulerRateFactor is how many times the submission rate a scheduler
// universe job's process may submit at: a DAG submits a cluster per node,
// and at the rate meant for a person typing it would be the pool's
// bottleneck.
const schedulerRateFactor = 50

type bucket struct {
	tokens float64
	last   time.Time
}

// rateFor is the rate, and burst, of k's bucket. r.mu is held.
func (r *rateLimiter) rateFor(k rateKey) float64 {
	if k.scheduler {
		return r.rate * schedulerRateFactor
	}
	return r.rate
}

// allow takes a token from k's bucket if it has one.
func (r *rateLimiter) allow(k rateKey, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[k]
	if b == nil {
		if r.buckets == nil {
			r.buckets = map[rateKey]*bucket{}
		}
		b = &bucket{tokens: r.rateFor(k), last: now}
		r.buckets[k] = b
	}
	rate := r.rateFor(k)
	b.tokens = min(rate, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// limitRate is the local server's tap: it refuses a user's NewCluster or
// Submit beyond the submission rate before gRPC reads the request, so a
// flood costs the agent neither the reading nor the memory.
func (a *Agent) limitRate(ctx context.Context, info *tap.Info) (context.Context, error) {
	switch info.FullMethodName {
	case wire.Schedd_NewCluster_FullMethodName, wire.Schedd_Submit_FullMethodName, wire.Schedd_SubmitClusters_FullMethodName,
		wire.Schedd_SubmitSpooled_FullMethodName:
	default:
		return ctx, nil
	}
	cred, ok := peercred.FromContext(ctx)
	if !ok {
		return ctx, nil // the handler refuses a caller without credentials
	}
	if err := a.allowSubmission(cred.UID, info.FullMethodName, a.schedulerProcs.has(cred.PID)); err != nil {
		return nil, err
	}
	return ctx, nil
}

// allowSubmission refuses a submission call (method) by uid beyond the
// submission rate.
func (a *Agent) allowSubmission(uid uint32, method string, scheduler bool) error {
	switch method {
	case wire.Schedd_NewCluster_FullMethodName, wire.Schedd_Submit_FullMethodName, wire.Schedd_SubmitClusters_FullMethodName,
		wire.Schedd_SubmitSpooled_FullMethodName:
	default:
		return nil
	}
	if !a.submitRate.allow(rateKey{uid: uid, method: method, scheduler: scheduler}, time.Now()) {
		return limitError("MAX_SUBMISSIONS_PER_SECOND", a.limits.Load().SubmitRate, "too many submissions per second from uid %d", uid)
	}
	return nil
}

// pidSet is the processes of the scheduler universe jobs running now.
type pidSet struct {
	mu   sync.Mutex
	pids map[int32]bool // guarded by mu
}

func (p *pidSet) add(pid int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pids == nil {
		p.pids = map[int32]bool{}
	}
	p.pids[pid] = true
}

func (p *pidSet) remove(pid int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pids, pid)
}

func (p *pidSet) has(pid int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pids[pid]
}

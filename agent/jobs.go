package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// jobTable makes the job state transitions: each reads the job, decides,
// and commits the change durably before anyone is told about it. The
// read-decide-commit of one job is serialised by that job's lock stripe;
// transitions of different jobs run concurrently, so that the store can
// group-commit them under one fsync.
type jobTable struct {
	a     *Agent
	locks [64]sync.Mutex
}

func (t *jobTable) lock(id jobqueue.JobID) *sync.Mutex {
	h := uint(id.Cluster)*2654435761 ^ uint(id.Proc)
	return &t.locks[h%uint(len(t.locks))]
}

// change is one transition's edits: attribute values to set.
type change map[string]classad.Value

func (c change) apply(txn *jobqueue.Txn, id jobqueue.JobID) {
	for name, v := range c {
		txn.Set(id, name, classad.Literal(v))
	}
}

// endRun adds the run that ends when the job ad moves to status to, if it
// was running, to the job's RemoteWallClockTime, as HTCondor accounts it:
// the total of every run's wall-clock seconds, kept across evictions.
func (c change) endRun(ad *classad.ClassAd, to JobStatus, now int64) {
	from := statusOf(ad)
	if (from != Running && from != Suspended) || to == Running || to == Suspended {
		return
	}
	start, ok := ad.EvalInt(AttrJobCurrentStartDate)
	if !ok || now < start {
		return
	}
	total, _ := ad.EvalReal(AttrRemoteWallClockTime)
	c[AttrRemoteWallClockTime] = classad.Real(total + float64(now-start))
	c[AttrLastRemoteWallClockTime] = classad.Real(float64(now - start))
}

// errNoJob is returned for a job id that is not in the queue.
type errNoJob jobqueue.JobID

func (e errNoJob) Error() string { return fmt.Sprintf("job %s not found", jobqueue.JobID(e)) }

// transition applies decide to the job's current ad; decide returns the
// edits (nil for none) or an error that refuses the transition. The new ad
// is returned.
func (t *jobTable) transition(ctx context.Context, id jobqueue.JobID, decide func(ad *classad.ClassAd) (change, error)) (*classad.ClassAd, error) {
	mu := t.lock(id)
	mu.Lock()
	defer mu.Unlock()
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return nil, errNoJob(id)
	}
	c, err := decide(ad)
	if err != nil || c == nil {
		return ad, err
	}
	if st, ok := c[AttrJobStatus]; ok {
		old := statusOf(ad)
		if n, ok := st.IntValue(); ok && JobStatus(n) != old {
			v := JobStatus(n)
			now := time.Now().Unix()
			c[AttrLastJobStatus] = old.value()
			c[AttrEnteredCurrentStatus] = classad.Int(now)
			c.endRun(ad, v, now)
			if v == Idle {
				t.a.reschedule.Store(true)
			}
		}
	}
	txn := &jobqueue.Txn{}
	c.apply(txn, id)
	if err := t.a.queue.Commit(ctx, txn); err != nil {
		return nil, fmt.Errorf("update job %s: %w", id, err)
	}
	for name, v := range c {
		ad.SetValue(name, v)
	}
	return ad, nil
}

// transitionTxn runs build on the entry's current ad under its lock and
// commits the transaction build fills; build may add operations on other
// entries too (a factory making jobs).
func (t *jobTable) transitionTxn(ctx context.Context, id jobqueue.JobID, build func(ad *classad.ClassAd, txn *jobqueue.Txn) error) (*classad.ClassAd, error) {
	mu := t.lock(id)
	mu.Lock()
	defer mu.Unlock()
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return nil, errNoJob(id)
	}
	txn := &jobqueue.Txn{}
	if err := build(ad, txn); err != nil {
		return nil, err
	}
	if err := t.a.queue.Commit(ctx, txn); err != nil {
		return nil, fmt.Errorf("update %s: %w", id, err)
	}
	return ad, nil
}

// retire moves a job that has left the queue (completed or removed) to the
// history, with its final edits, in one transaction: if the commit fails
// (a full disk) the job is still in the queue, as it was, and not in the
// history; once it succeeds it is in the history only.
func (t *jobTable) retire(ctx context.Context, id jobqueue.JobID, final change) (*classad.ClassAd, error) {
	mu := t.lock(id)
	mu.Lock()
	defer mu.Unlock()
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return nil, errNoJob(id)
	}
	now := time.Now().Unix()
	if old := statusOf(ad); old != 0 {
		ad.SetValue(AttrLastJobStatus, old.value())
	}
	ad.SetInt(AttrEnteredCurrentStatus, now)
	if st, ok := final[AttrJobStatus].IntValue(); ok {
		final.endRun(ad, JobStatus(st), now)
	}
	for name, v := range final {
		ad.SetValue(name, v)
	}
	txn := &jobqueue.Txn{}
	txn.Retire(id, ad) // the store keeps ad: only read it from here on
	err := t.a.queue.Commit(ctx, txn)
	if _, queued := t.a.queue.Get(id); !queued {
		// Retired, even if ctx ended before the commit returned.
		owner, _ := ad.EvalString(AttrOwner)
		t.a.quota.give(owner, 1)
	}
	if err != nil {
		return nil, fmt.Errorf("retire job %s: %w", id, err)
	}
	t.a.dropCheckpoint(ad)
	return ad, nil
}

// status returns a job's JobStatus, or 0 if it is not in the queue.
func (t *jobTable) status(id jobqueue.JobID) JobStatus {
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return 0
	}
	return statusOf(ad)
}

// jobID reads the id attributes of a job ad.
func jobID(ad *classad.ClassAd) jobqueue.JobID {
	c, _ := ad.EvalInt(AttrClusterID)
	p, _ := ad.EvalInt(AttrProcID)
	return jobqueue.JobID{Cluster: int(c), Proc: int(p)}
}

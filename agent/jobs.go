package agent

import (
	"context"
	"fmt"
	"sync"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// jobTable makes the changes to queue entries: each reads the entry,
// decides, and commits the change durably before anyone is told about it
// (see apply for a job's moves). The read-decide-commit of one entry is
// serialised by that entry's lock stripe.
type jobTable struct {
	a     *Agent
	locks [64]sync.Mutex
}

func (t *jobTable) lock(id jobqueue.JobID) *sync.Mutex {
	h := uint(id.Cluster)*2654435761 ^ uint(id.Proc)
	return &t.locks[h%uint(len(t.locks))]
}

// errNoJob is returned for a job id that is not in the queue.
type errNoJob jobqueue.JobID

func (e errNoJob) Error() string { return fmt.Sprintf("job %s not found", jobqueue.JobID(e)) }

// transitionTxn runs build on the entry's current ad under its lock and
// commits the transaction build fills, with the job events build returns;
// build may add operations on other entries too (a factory making jobs).
func (t *jobTable) transitionTxn(ctx context.Context, id jobqueue.JobID, build func(ad *classad.ClassAd, txn *jobqueue.Txn) ([]joblog.Event, error)) (*classad.ClassAd, error) {
	mu := t.lock(id)
	mu.Lock()
	defer mu.Unlock()
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return nil, errNoJob(id)
	}
	txn := &jobqueue.Txn{}
	events, err := build(ad, txn)
	if err != nil {
		return nil, err
	}
	if err := t.a.commit(ctx, txn, events); err != nil {
		return nil, fmt.Errorf("update %s: %w", id, err)
	}
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

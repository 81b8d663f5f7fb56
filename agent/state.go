package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// The job's lifecycle. A job moves between its states only as follows
// says, and only through jobTable.apply, which makes each move one store
// transaction: the new state, every attribute that goes with it, and (for
// Completed and Removed) the job's move to the history are durable
// together or not at all. A crash therefore leaves a job in the state
// before a move or after it, never between two halves of one.
//
//	Idle      → Running (executing), Held (hold, a shadow's hold before
//	            the job started), Removed (rm), Completed (an exit whose
//	            start was not recorded)
//	Running   → Suspended, Idle (evicted, failed, an exit that runs
//	            again, agent restart), Held (hold, on-exit or shadow
//	            hold), Completed (exit), Removed
//	Suspended → Running (resumed), and wherever Running may go
//	            but to Suspended
//	Held      → Idle (release), Removed
//	Completed, Removed: the job has left the queue for the history;
//	            but a completed spooled job stays until its outputs are
//	            fetched or its LeaveJobInQueue ends (see spool.go), and
//	            may then be Removed.
//
// Events and the job event log: a store that keeps events (pgqueue's
// job_events) records a move's events in the move's own transaction. They
// are appended to the job's event log after its commit, under the job's
// lock, so that a log
// never tells of a move the queue does not hold and one job's events are
// in the order of its moves. A crash between the commit and the write
// loses that move's events, and only those; the agent does not write
// them on restart, as it cannot tell whether the write happened. HTCondor's shadow writes the terminated event before
// its schedd commits the exit, and so may log a job's end twice (once for
// a run the crash made repeat); Harrier logs it at most once, and the
// queue and history, not the log, are the job's record. A job that was
// running when the agent stopped is logged as evicted on restart.

// ErrIllegalTransition is matched by every *TransitionError.
var ErrIllegalTransition = errors.New("illegal job transition")

// TransitionError reports a move the job lifecycle does not allow.
type TransitionError struct {
	Job      jobqueue.JobID
	From, To JobStatus
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("job %s: cannot go from %s to %s", e.Job, e.From, e.To)
}

// Is makes errors.Is(err, ErrIllegalTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// follows reports whether a job may move from state from to state to.
func (to JobStatus) follows(from JobStatus) bool {
	switch to {
	case Idle:
		return from == Running || from == Suspended || from == Held
	case Running:
		return from == Idle || from == Suspended
	case Suspended:
		return from == Running
	case Held:
		return from == Idle || from == Running || from == Suspended
	case Completed:
		// From Idle: an exit whose start was not recorded.
		return from == Idle || from == Running || from == Suspended
	case Removed:
		// From Completed: a spooled job waiting for its outputs to be
		// fetched.
		return from == Idle || from == Running || from == Suspended || from == Held || from == Completed
	}
	return false
}

// leaves reports whether a job in state s has left the queue.
func (s JobStatus) leaves() bool { return s == Completed || s == Removed }

// runs reports whether a job in state s holds a slot.
func (s JobStatus) runs() bool { return s == Running || s == Suspended }

// change is a step's edits: attribute values to set.
type change map[string]classad.Value

// endRun adds the run that ends when the job ad moves to status to, if it
// was running, to the job's RemoteWallClockTime, as HTCondor accounts it:
// the total of every run's wall-clock seconds, kept across evictions.
func (c change) endRun(ad *classad.ClassAd, to JobStatus, now int64) {
	if !statusOf(ad).runs() || to.runs() {
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

// step is one move of one job, as a decision over its current ad: the
// state it moves to (zero: it stays where it is and only set changes),
// the attributes set with the move, and the events its event log gets
// once the move is durable. The zero step changes nothing.
type step struct {
	to  JobStatus
	set change
	// log, if not nil, returns the events for the job's ad as the move
	// left it.
	log func(after *classad.ClassAd) []joblog.Event
}

// logs returns a step's log function for events that do not depend on
// the ad.
func logs(evs ...joblog.Event) func(*classad.ClassAd) []joblog.Event {
	return func(*classad.ClassAd) []joblog.Event { return evs }
}

// apply makes one move of job id: decide reads the job's current ad (its
// own copy) and returns the step, or an error that refuses it. apply
// checks the move against the lifecycle, commits it as one transaction
// and, once it is durable, writes its events. It returns the job's ad as
// the step left it; for a job that left the queue, its history record.
//
// Moves of one job are serialised by the job's lock stripe; moves of
// different jobs run concurrently, so that the store can group-commit
// them under one fsync.
func (t *jobTable) apply(ctx context.Context, id jobqueue.JobID, decide func(ad *classad.ClassAd) (step, error)) (*classad.ClassAd, error) {
	mu := t.lock(id)
	mu.Lock()
	defer mu.Unlock()
	ad, ok := t.a.queue.Get(id)
	if !ok {
		return nil, errNoJob(id)
	}
	s, err := decide(ad)
	if err != nil {
		return nil, err
	}
	if s.to == 0 && len(s.set) == 0 {
		return ad, nil
	}
	c := s.set
	if c == nil {
		c = change{}
	}
	from := statusOf(ad)
	if s.to != 0 {
		if !s.to.follows(from) {
			return nil, &TransitionError{Job: id, From: from, To: s.to}
		}
		now := time.Now().Unix()
		c[AttrJobStatus] = s.to.value()
		c[AttrLastJobStatus] = from.value()
		c[AttrEnteredCurrentStatus] = classad.Int(now)
		c.endRun(ad, s.to, now)
	}
	for name, v := range c {
		ad.SetValue(name, v)
	}
	// A completed job kept in the queue leaves once its LeaveJobInQueue
	// ends or, spooled, its outputs are fetched: a change, not a move.
	leaving := statusOf(ad).leaves() && !keptInQueue(ad)
	txn := &jobqueue.Txn{}
	if leaving {
		txn.Retire(id, ad) // the store keeps ad: only read it from here on
	} else {
		for name, v := range c {
			txn.Set(id, name, classad.Literal(v))
		}
	}
	var evs []joblog.Event
	if s.log != nil {
		evs = stamp(ad, s.log(ad))
	}
	err = t.a.commit(ctx, txn, evs)
	if leaving {
		if _, queued := t.a.queue.Get(id); !queued {
			// Retired, even if ctx ended before the commit returned.
			owner, _ := ad.EvalString(AttrOwner)
			t.a.quota.give(owner, 1)
			t.a.dropCheckpoint(ad)
			t.a.dropSpool(ad)
		}
	}
	if err != nil {
		if s.to != 0 {
			return nil, fmt.Errorf("move job %s to %s: %w", id, s.to, err)
		}
		return nil, fmt.Errorf("update job %s: %w", id, err)
	}
	if s.to == Idle {
		t.a.reschedule.Store(true)
	}
	for _, ev := range evs {
		t.a.logEvent(ad, ev)
	}
	return ad, nil
}

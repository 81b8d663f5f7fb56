package jobqueue

import (
	"errors"
	"fmt"

	"harrier.dev/harrier/classad"
)

// queue is the in-memory job queue that the log describes.
//
// Ads stored in jobs are never modified once another goroutine may see
// them: a change replaces the ad with a modified copy. That lets Scan and
// compaction read a copy of the map without holding up commits.
type queue struct {
	jobs        map[JobID]*classad.ClassAd
	nextCluster int // lowest cluster number never handed out or used
}

func newQueue() *queue {
	return &queue{jobs: make(map[JobID]*classad.ClassAd), nextCluster: 1}
}

// apply performs one operation. Ads listed in owned may be changed in
// place; any other ad is copied first and the copy added to owned. The
// caller has checked that op applies, so a failure means corrupt input.
func (q *queue) apply(op Op, owned map[*classad.ClassAd]bool) error {
	switch op.kind {
	case OpNewCluster:
		q.reserve(op.id.Cluster)
	case opNextCluster:
		q.nextCluster = max(q.nextCluster, op.id.Cluster)
	case OpNewJob:
		if _, ok := q.jobs[op.id]; ok {
			return fmt.Errorf("%s %s: %w", op.kind, op.id, ErrExists)
		}
		q.jobs[op.id] = op.ad
		q.reserve(op.id.Cluster)
	case OpSet, OpDelete:
		ad, ok := q.jobs[op.id]
		if !ok {
			return fmt.Errorf("%s %s: %w", op.kind, op.id, ErrNotFound)
		}
		if !owned[ad] {
			ad = ad.Copy()
			owned[ad] = true
			q.jobs[op.id] = ad
		}
		if op.kind == OpSet {
			ad.Set(op.name, op.expr)
		} else {
			ad.Delete(op.name)
		}
	case OpDestroy:
		if _, ok := q.jobs[op.id]; !ok {
			return fmt.Errorf("%s %s: %w", op.kind, op.id, ErrNotFound)
		}
		delete(q.jobs, op.id)
	default:
		return fmt.Errorf("operation %s does not belong in a job queue", op.kind)
	}
	return nil
}

// reserve records that cluster c is taken.
func (q *queue) reserve(c int) {
	if c >= q.nextCluster {
		q.nextCluster = c + 1
	}
}

// errBadID refuses ids no job can have. Proc -1 is allowed: it is where
// HTCondor keeps a cluster's own ad (the agent stores late-materialization
// factories there).
var errBadID = errors.New("cluster must be positive and proc at least -1")

// checker decides whether transactions apply, before they are written,
// against the queue plus the transactions accepted ahead of them in the
// same commit group.
type checker struct {
	q      *queue
	group  map[JobID]bool // in the group so far: true added, false destroyed
	txn    map[JobID]bool // in the transaction being checked
	next   int            // cluster counter after the group so far
	txnNxt int
}

func newChecker(q *queue) *checker {
	return &checker{q: q, group: make(map[JobID]bool), next: q.nextCluster}
}

func (c *checker) exists(id JobID) bool {
	if v, ok := c.txn[id]; ok {
		return v
	}
	if v, ok := c.group[id]; ok {
		return v
	}
	_, ok := c.q.jobs[id]
	return ok
}

// check reports whether t applies after the transactions accepted so far,
// and if so accepts it.
func (c *checker) check(t *Txn) error {
	if c.txn == nil {
		c.txn = make(map[JobID]bool)
	}
	clear(c.txn)
	c.txnNxt = c.next
	for i, op := range t.ops {
		if (op.kind == OpNewCluster || op.kind == OpNewJob) && (op.id.Cluster < 1 || op.id.Proc < -1) {
			return opError(i, op, errBadID)
		}
		switch op.kind {
		case OpNewCluster:
		case OpNewJob:
			if c.exists(op.id) {
				return opError(i, op, ErrExists)
			}
			c.txn[op.id] = true
		case OpSet, OpDelete:
			if !c.exists(op.id) {
				return opError(i, op, ErrNotFound)
			}
		case OpDestroy:
			if !c.exists(op.id) {
				return opError(i, op, ErrNotFound)
			}
			c.txn[op.id] = false
		}
		if (op.kind == OpNewCluster || op.kind == OpNewJob) && op.id.Cluster >= c.txnNxt {
			c.txnNxt = op.id.Cluster + 1
		}
	}
	if len(c.group) == 0 {
		c.group, c.txn = c.txn, c.group
	} else {
		for id, v := range c.txn {
			c.group[id] = v
		}
	}
	c.next = c.txnNxt
	return nil
}

// allocate hands out the next cluster number.
func (c *checker) allocate() int {
	n := c.next
	c.next++
	return n
}

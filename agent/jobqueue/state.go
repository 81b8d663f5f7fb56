package jobqueue

import (
	"fmt"
	"slices"

	"harrier.dev/harrier/classad"
)

// queue is the in-memory job queue that the log describes.
//
// Ads stored in jobs are never modified once another goroutine may see
// them: a change replaces the ad with a modified copy. That lets Scan and
// compaction read a copy of the map without holding up commits.
type queue struct {
	jobs        map[JobID]*classad.ClassAd
	reserved    map[int]string // open reservations: cluster → owner
	nextCluster int            // lowest cluster number never handed out or used
}

func newQueue() *queue {
	return &queue{jobs: make(map[JobID]*classad.ClassAd), reserved: make(map[int]string), nextCluster: 1}
}

// apply performs one operation. Ads listed in owned may be changed in
// place; any other ad is copied first and the copy added to owned. The
// caller has checked that op applies, so a failure means corrupt input.
func (q *queue) apply(op Op, owned map[*classad.ClassAd]bool) error {
	switch op.kind {
	case opNewCluster:
		q.reserve(op.id.Cluster)
	case opNextCluster:
		q.nextCluster = max(q.nextCluster, op.id.Cluster)
	case opReserve:
		if op.id.Cluster < 1 || op.name == "" {
			return fmt.Errorf("%s of cluster %d for %q: %w", op.kind, op.id.Cluster, op.name, ErrBadID)
		}
		q.reserve(op.id.Cluster)
		q.reserved[op.id.Cluster] = op.name
		if op.id.Proc != 0 {
			delete(q.reserved, op.id.Proc) // the owner's oldest, ended
		}
	case OpUseCluster:
		if o, ok := q.reserved[op.id.Cluster]; !ok || o != op.name {
			return fmt.Errorf("%s %d by %q: %w", op.kind, op.id.Cluster, op.name, ErrNotReserved)
		}
		delete(q.reserved, op.id.Cluster)
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
	case OpDestroy, OpRetire:
		// The history record of OpRetire is the Log's to write.
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

// checker decides whether transactions apply, before they are written,
// against the queue plus the transactions accepted ahead of them in the
// same commit group.
type checker struct {
	q     *queue
	group map[JobID]bool // in the group so far: true added, false destroyed
	txn   map[JobID]bool // in the transaction being checked
	// Reservations made (the owner) or ended ("") by the group so far,
	// and by the transaction being checked; made when first needed, as
	// most groups neither reserve nor use a cluster.
	resv, resvTxn map[int]string
	next          int // cluster counter after the group so far
	txnNxt        int
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

// reservedTo returns the owner of the open reservation of cluster, or "".
func (c *checker) reservedTo(cluster int) string {
	if o, ok := c.resvTxn[cluster]; ok {
		return o
	}
	if o, ok := c.resv[cluster]; ok {
		return o
	}
	return c.q.reserved[cluster]
}

// check reports whether t applies after the transactions accepted so far,
// and if so accepts it.
func (c *checker) check(t *Txn) error {
	if c.txn == nil {
		c.txn = make(map[JobID]bool)
	}
	clear(c.txn)
	clear(c.resvTxn)
	c.txnNxt = c.next
	for i, op := range t.ops {
		switch op.kind {
		case OpNewJob:
			if op.id.Cluster < 1 || op.id.Proc < -1 {
				return opError(i, op, ErrBadID)
			}
			if c.exists(op.id) {
				return opError(i, op, ErrExists)
			}
			c.txn[op.id] = true
			if op.id.Cluster >= c.txnNxt {
				c.txnNxt = op.id.Cluster + 1
			}
		case OpSet, OpDelete:
			if !c.exists(op.id) {
				return opError(i, op, ErrNotFound)
			}
		case OpDestroy, OpRetire:
			if !c.exists(op.id) {
				return opError(i, op, ErrNotFound)
			}
			c.txn[op.id] = false
		case OpUseCluster:
			if op.name == "" || c.reservedTo(op.id.Cluster) != op.name {
				return opError(i, op, ErrNotReserved)
			}
			if c.resvTxn == nil {
				c.resvTxn = make(map[int]string)
			}
			c.resvTxn[op.id.Cluster] = ""
		default:
			return opError(i, op, fmt.Errorf("not an operation of a transaction"))
		}
	}
	if len(c.group) == 0 {
		c.group, c.txn = c.txn, c.group
	} else {
		for id, v := range c.txn {
			c.group[id] = v
		}
	}
	if len(c.resvTxn) > 0 && c.resv == nil {
		c.resv = make(map[int]string)
	}
	for n, o := range c.resvTxn {
		c.resv[n] = o
	}
	c.next = c.txnNxt
	return nil
}

// reserve hands out the next cluster number to owner. If owner then holds
// more than limit open reservations, it also returns the oldest of them,
// which the reservation ends.
func (c *checker) reserve(owner string, limit int) (cluster, evict int) {
	cluster = c.next
	c.next++
	var open []int
	for n, o := range c.q.reserved {
		if v, ok := c.resv[n]; ok {
			o = v
		}
		if o == owner {
			open = append(open, n)
		}
	}
	for n, o := range c.resv {
		if _, ok := c.q.reserved[n]; !ok && o == owner {
			open = append(open, n)
		}
	}
	if c.resv == nil {
		c.resv = make(map[int]string)
	}
	if len(open) >= limit {
		evict = slices.Min(open)
		c.resv[evict] = ""
	}
	c.resv[cluster] = owner
	return cluster, evict
}

package pgqueue

import (
	"errors"
	"fmt"
	"slices"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// mirror is the store's copy of the queue, as of its last commit: what
// Get, Scan and Len read, and what transactions are checked against.
//
// Its ads are never modified once another goroutine may see them: a
// change replaces the ad with a modified copy. That lets Scan copy the map
// and read it without holding up commits.
type mirror struct {
	jobs     map[jobqueue.JobID]*classad.ClassAd
	reserved map[int]string // open reservations: cluster → owner
	next     int            // lowest cluster number never handed out or used
}

// group is one commit group being checked: the transactions and
// reservations accepted so far, as changes to the mirror, and those of
// the transaction being checked, kept apart until it is accepted.
type group struct {
	base  *mirror
	limit int // open reservations an owner may hold

	jobs    map[jobqueue.JobID]*classad.ClassAd // final ads of the jobs it changes; nil: left the queue
	resv    map[int]string                      // reservations it made (the owner) or ended ("")
	next    int
	history []retired      // retirements, in order
	events  []joblog.Event // events of the accepted transactions, in order

	// The transaction being checked.
	tjobs map[jobqueue.JobID]*classad.ClassAd
	tresv map[int]string
	tnext int
	thist []retired
	owned map[*classad.ClassAd]bool // ads it made, changed in place
}

func newGroup(base *mirror, limit int) *group {
	return &group{
		base: base, limit: limit, next: base.next,
		jobs: make(map[jobqueue.JobID]*classad.ClassAd), resv: make(map[int]string),
		tjobs: make(map[jobqueue.JobID]*classad.ClassAd), tresv: make(map[int]string),
		owned: make(map[*classad.ClassAd]bool),
	}
}

// lookup returns the ad of job id after what has been checked so far.
func (g *group) lookup(id jobqueue.JobID) (*classad.ClassAd, bool) {
	if ad, ok := g.tjobs[id]; ok {
		return ad, ad != nil
	}
	if ad, ok := g.jobs[id]; ok {
		return ad, ad != nil
	}
	ad, ok := g.base.jobs[id]
	return ad, ok
}

// reservedTo returns the owner of the open reservation of cluster, or "".
func (g *group) reservedTo(cluster int) string {
	if o, ok := g.tresv[cluster]; ok {
		return o
	}
	if o, ok := g.resv[cluster]; ok {
		return o
	}
	return g.base.reserved[cluster]
}

// retired is a job that left the queue, and its final ad.
type retired struct {
	id jobqueue.JobID
	ad *classad.ClassAd
}

var errNoAd = errors.New("no ad")

// check reports whether txn applies after what the group holds, and if so
// adds it to the group. A transaction that does not apply leaves the group
// as it was.
func (g *group) check(txn *jobqueue.Txn) error {
	clear(g.tjobs)
	clear(g.tresv)
	clear(g.owned)
	g.thist = g.thist[:0]
	g.tnext = g.next
	for i, op := range txn.Ops() {
		if err := g.op(op); err != nil {
			return fmt.Errorf("op %d (%s %s): %w", i, op.Kind(), op.Job(), err)
		}
	}
	for id, ad := range g.tjobs {
		g.jobs[id] = ad
	}
	for c, o := range g.tresv {
		g.resv[c] = o
	}
	g.next = g.tnext
	g.history = append(g.history, g.thist...)
	return nil
}

func (g *group) op(op jobqueue.Op) error {
	id := op.Job()
	switch op.Kind() {
	case jobqueue.OpNewJob:
		if id.Cluster < 1 || id.Proc < -1 {
			return jobqueue.ErrBadID
		}
		if op.Ad() == nil {
			return errNoAd
		}
		if _, ok := g.lookup(id); ok {
			return jobqueue.ErrExists
		}
		g.tjobs[id] = op.Ad() // the transaction's: copied before a change
		g.tnext = max(g.tnext, id.Cluster+1)
	case jobqueue.OpSet, jobqueue.OpDelete:
		ad, ok := g.lookup(id)
		if !ok {
			return jobqueue.ErrNotFound
		}
		if !g.owned[ad] {
			ad = ad.Copy()
			g.owned[ad] = true
			g.tjobs[id] = ad
		}
		if op.Kind() == jobqueue.OpSet {
			ad.Set(op.Name(), op.Expr())
		} else {
			ad.Delete(op.Name())
		}
	case jobqueue.OpDestroy, jobqueue.OpRetire:
		if _, ok := g.lookup(id); !ok {
			return jobqueue.ErrNotFound
		}
		if op.Kind() == jobqueue.OpRetire {
			if op.Ad() == nil {
				return errNoAd
			}
			g.thist = append(g.thist, retired{id, op.Ad()})
		}
		g.tjobs[id] = nil
	case jobqueue.OpUseCluster:
		if op.Owner() == "" || g.reservedTo(id.Cluster) != op.Owner() {
			return jobqueue.ErrNotReserved
		}
		g.tresv[id.Cluster] = ""
	default:
		return errors.New("not an operation of a transaction")
	}
	return nil
}

// reserve hands out the next cluster number to owner, ending the owner's
// oldest open reservation if the owner already holds the limit.
func (g *group) reserve(owner string) int {
	c := g.next
	g.next++
	var open []int
	for n, o := range g.base.reserved {
		if v, ok := g.resv[n]; ok {
			o = v
		}
		if o == owner {
			open = append(open, n)
		}
	}
	for n, o := range g.resv {
		if _, ok := g.base.reserved[n]; !ok && o == owner {
			open = append(open, n)
		}
	}
	if len(open) >= g.limit {
		g.resv[slices.Min(open)] = ""
	}
	g.resv[c] = owner
	return c
}

// empty reports whether the group changes nothing.
func (g *group) empty() bool {
	return len(g.jobs) == 0 && len(g.resv) == 0 && len(g.history) == 0 && len(g.events) == 0 && g.next == g.base.next
}

// apply makes the group's changes to m, once they are in the database.
func (g *group) apply(m *mirror) {
	for id, ad := range g.jobs {
		if ad == nil {
			delete(m.jobs, id)
		} else {
			m.jobs[id] = ad
		}
	}
	for c, o := range g.resv {
		if o == "" {
			delete(m.reserved, c)
		} else {
			m.reserved[c] = o
		}
	}
	m.next = g.next
}

package matchmaker

import (
	"cmp"

	"harrier.dev/harrier/classad"
)

// AttrAccountingGroup is who a job is charged to when its owner runs it
// in one of the pool's accounting groups ("group_physics.alice"): its
// agent sets it, and a claimed slot publishes its job's.
const AttrAccountingGroup = "AccountingGroup"

// submitter names the user a request negotiates for: its accounting
// group, its Owner, or its agent when the ad has neither.
func submitter(r *Request) string {
	if s := chargedTo(r.Ad, "Owner"); s != "" {
		return s
	}
	return r.Agent
}

// chargedTo names who the job of ad, a job's or a claimed slot's, is
// charged to: its AccountingGroup, else the owner its attribute owner
// names ("Owner" in a job's ad, "RemoteOwner" in a slot's).
func chargedTo(ad *classad.ClassAd, owner string) string {
	if g, ok := ad.EvalString(AttrAccountingGroup); ok && g != "" {
		return g
	}
	s, _ := ad.EvalString(owner)
	return s
}

// jobKey holds the attributes that order jobs within a submitter group.
type jobKey struct {
	prio, qdate, cluster, proc int64
}

func keyOfJob(ad *classad.ClassAd) jobKey {
	var k jobKey
	k.prio, _ = ad.EvalInt("JobPrio")
	k.qdate, _ = ad.EvalInt("QDate")
	k.cluster, _ = ad.EvalInt("ClusterId")
	k.proc, _ = ad.EvalInt("ProcId")
	return k
}

// compare orders by JobPrio descending, then QDate, ClusterId and ProcId
// ascending.
func (a jobKey) compare(b jobKey) int {
	if c := cmp.Compare(b.prio, a.prio); c != 0 {
		return c
	}
	if c := cmp.Compare(a.qdate, b.qdate); c != 0 {
		return c
	}
	if c := cmp.Compare(a.cluster, b.cluster); c != 0 {
		return c
	}
	return cmp.Compare(a.proc, b.proc)
}

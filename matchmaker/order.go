package matchmaker

import (
	"cmp"

	"harrier.dev/harrier/classad"
)

// submitter names the user a request negotiates for: its Owner, or its
// agent when the ad has none.
func submitter(r *Request) string {
	if s, ok := r.Ad.EvalString("Owner"); ok && s != "" {
		return s
	}
	return r.Agent
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

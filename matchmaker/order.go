package matchmaker

import (
	"cmp"
	"slices"

	"harrier.dev/harrier/classad"
)

// submitter names the user a job negotiates for: its Owner, or its agent
// when the ad has none.
func submitter(j Job) string {
	if s, ok := j.Ad.EvalString("Owner"); ok && s != "" {
		return s
	}
	return j.Agent
}

// groupBySubmitter splits jobs into the groups that negotiate one after the
// other: submitters in priority order, submitters of equal priority in one
// group. Each group is in job order.
func groupBySubmitter(jobs []Job, p Prioritizer) [][]Job {
	type entry struct {
		prio float64
		key  jobKey
		job  Job
	}
	entries := make([]entry, len(jobs))
	cache := make(map[string]float64)
	for i, j := range jobs {
		var prio float64
		if p != nil {
			s := submitter(j)
			v, ok := cache[s]
			if !ok {
				v = p.Priority(s)
				cache[s] = v
			}
			prio = v
		}
		entries[i] = entry{prio: prio, key: keyOfJob(j.Ad), job: j}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		return a.key.compare(b.key)
	})
	var groups [][]Job
	for i, e := range entries {
		if i == 0 || e.prio != entries[i-1].prio {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], e.job)
	}
	return groups
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

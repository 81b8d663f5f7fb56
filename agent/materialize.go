package agent

import (
	"context"
	"fmt"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// Late materialization (HTCondor's max_idle and max_materialize): a
// cluster submitted with more jobs than JobMaterializeMaxIdle or
// JobMaterializeLimit is stored as a factory — the cluster ad under job id
// C.-1, with each remaining job's own attributes in JobMaterializeItems —
// and only that many of its jobs exist at first. As jobs leave Idle (for
// max_idle) or the queue (for max_materialize), the agent makes the next
// ones, each in one transaction with the factory's progress, so a crash
// neither loses nor repeats one.

const (
	factoryProc     = -1   // HTCondor's proc id of a cluster ad
	materializeStep = 1000 // jobs made per transaction at most
)

// isJob reports whether a queue entry is a job rather than a factory.
func isJob(id jobqueue.JobID) bool { return id.Proc != factoryProc }

// factoryPlan splits a submission whose cluster ad asks for late
// materialization: it returns how many jobs to make now. Zero means make
// them all.
func factoryPlan(common *classad.ClassAd, n int) int {
	if common == nil {
		return 0
	}
	now := materializable(common, 0, 0)
	if now < 0 || now >= int64(n) {
		return 0
	}
	return int(now)
}

// materializable is how many more jobs a factory (or a cluster ad about to
// become one) allows, given idle of its jobs Idle and present in the
// queue; -1 when it sets no limit.
func materializable(f *classad.ClassAd, idle, present int64) int64 {
	n := int64(-1)
	if max, ok := f.EvalInt(AttrJobMaterializeMaxIdle); ok && max > 0 {
		n = max - idle
	}
	if limit, ok := f.EvalInt(AttrJobMaterializeLimit); ok && limit > 0 && (n < 0 || limit-present < n) {
		n = limit - present
	}
	return n
}

// factoryAd is the record of a cluster's jobs still to be made.
func factoryAd(common *classad.ClassAd, cluster, next int, items []string) *classad.ClassAd {
	f := common.Copy()
	f.SetInt(AttrClusterID, int64(cluster))
	f.SetInt(AttrProcID, factoryProc)
	f.SetInt(AttrJobMaterializeNextProcID, int64(next))
	f.SetInt(AttrTotalSubmitProcs, int64(len(items)))
	vals := make([]classad.Value, len(items))
	for i, s := range items {
		vals[i] = classad.String(s)
	}
	f.SetValue(AttrJobMaterializeItems, classad.List(vals...))
	return f
}

// materialize makes jobs of factories whose clusters have fewer idle jobs
// than they allow.
func (a *Agent) materialize(ctx context.Context) {
	if a.factories.Load() == 0 {
		return
	}
	type factory struct {
		id jobqueue.JobID
		ad *classad.ClassAd
	}
	var factories []factory
	idle, present := map[int]int64{}, map[int]int64{}
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) {
			factories = append(factories, factory{id, ad})
			return true
		}
		present[id.Cluster]++
		if st := statusOf(ad); st == Idle {
			idle[id.Cluster]++
		}
		return true
	})
	for _, f := range factories {
		want := materializable(f.ad, idle[f.id.Cluster], present[f.id.Cluster])
		if want <= 0 {
			continue
		}
		if err := a.makeJobs(ctx, f.id, int(min(want, materializeStep))); err != nil {
			a.log.Error("materialize jobs", "cluster", f.id.Cluster, "err", err)
		}
	}
}

// makeJobs makes up to n more jobs of the factory id.
func (a *Agent) makeJobs(ctx context.Context, id jobqueue.JobID, n int) error {
	var (
		made []*classad.ClassAd
		last bool // the factory is used up and destroyed
	)
	var events []joblog.Event
	_, err := a.jobs.transitionTxn(ctx, id, func(f *classad.ClassAd, txn *jobqueue.Txn) ([]joblog.Event, error) {
		next, _ := f.EvalInt(AttrJobMaterializeNextProcID)
		items, _ := f.Eval(AttrJobMaterializeItems).ListValue()
		common := f.Copy()
		for _, name := range []string{AttrJobMaterializeItems, AttrJobMaterializeNextProcID, AttrTotalSubmitProcs, AttrProcID} {
			common.Delete(name)
		}
		for i := int(next); i < len(items) && len(made) < n; i++ {
			text, _ := items[i].StringValue()
			own, err := classad.Parse(text)
			if err != nil {
				return nil, fmt.Errorf("job %d of cluster %d: %w", i, id.Cluster, err)
			}
			for _, name := range []string{AttrOwner, AttrUser, AttrQDate, AttrEnteredCurrentStatus, AttrClusterID} {
				own.Delete(name)
			}
			ad := common.Copy()
			ad.Update(own)
			owner, _ := ad.EvalString(AttrOwner)
			a.chargeJob(ad, owner)
			ad.SetString(AttrGlobalJobID, fmt.Sprintf("%s#%s#%d", a.cfg.Name, jobID(ad), time.Now().Unix()))
			txn.NewJob(jobID(ad), ad)
			made = append(made, ad)
			events = append(events, a.submitEvent(ad))
		}
		if last = int(next)+len(made) >= len(items); last {
			txn.Destroy(id)
		} else {
			txn.SetValue(id, AttrJobMaterializeNextProcID, classad.Int(next+int64(len(made))))
		}
		return events, nil
	})
	if err != nil {
		return err
	}
	// Counted once the factory is gone: a failed commit leaves it, and
	// its count, in place.
	if last {
		a.factories.Add(-1)
	}
	for i, ad := range made {
		a.logEvent(ad, events[i])
	}
	if len(made) > 0 {
		a.kick()
	}
	return nil
}

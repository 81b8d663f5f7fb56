package agent

import (
	"context"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// recover brings the queue back after a restart. Jobs that were running
// lost their shadows with the old agent (a shadow stops its job when its
// agent goes away), so they go back to idle and run again.
func (a *Agent) recover(ctx context.Context) error {
	var running []jobqueue.JobID
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		a.quota.count(id, ad)
		if !isJob(id) {
			a.factories.Add(1)
			return true
		}
		if st := statusOf(ad); st == Running || st == Suspended {
			running = append(running, id)
		}
		return true
	})
	for _, id := range running {
		ad, err := a.jobs.transition(ctx, id, func(*classad.ClassAd) (change, error) {
			return change{AttrJobStatus: Idle.value()}, nil
		})
		if err != nil {
			return err
		}
		a.logEvent(ad, evictedOnRestart)
	}
	if len(running) > 0 {
		a.log.Info("requeued jobs that were running when the agent stopped", "jobs", len(running))
	}
	return nil
}

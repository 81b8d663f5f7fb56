package agent

import (
	"context"
	"fmt"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// recover brings the queue back after a restart. Jobs that were running
// lost their shadows with the old agent (a shadow stops its job when its
// agent goes away), so they go back to idle and run again; so do local
// jobs, whose processes an agent that died may have left running.
func (a *Agent) recover(ctx context.Context) error {
	var running []jobqueue.JobID
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		a.quota.count(id, ad)
		if !isJob(id) {
			a.factories.Add(1)
			return true
		}
		if statusOf(ad).runs() {
			running = append(running, id)
			if isLocal(ad) {
				// It runs again from the start, as a remote job does:
				// condor_dagman recovers from its logs.
				a.endLeftover(id, ad)
			}
		}
		return true
	})
	for _, id := range running {
		_, err := a.jobs.apply(ctx, id, func(*classad.ClassAd) (step, error) {
			return step{to: Idle, log: logs(evictedOnRestart)}, nil
		})
		if err != nil {
			return fmt.Errorf("requeue job that was running: %w", err)
		}
	}
	if len(running) > 0 {
		a.log.Info("requeued jobs that were running when the agent stopped", "jobs", len(running))
	}
	a.sweepSpool(ctx)
	return nil
}

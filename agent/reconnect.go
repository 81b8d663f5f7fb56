package agent

import (
	"context"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// reconnection records that a running job's shadow and starter lost each
// other, found each other again, or did not within the job's lease
// (job_lease_duration): HTCondor's events 022, 023 and 024 in the job's
// log, JobDisconnectedDate while it is out of reach, and NumJobReconnects
// counting the reconnections. The job stays
// Running throughout; a failed reconnection is followed by the run's end.
func (a *Agent) reconnection(ctx context.Context, r *run, ev shadow.Event) {
	e := joblog.Event{Type: joblog.JobDisconnected, Host: ev.Host, Reason: ev.Reason}
	switch ev.Type {
	case shadow.EventReconnected:
		e = joblog.Event{Type: joblog.JobReconnected, Host: ev.Host}
	case shadow.EventReconnectFailed:
		e.Type = joblog.JobReconnectFailed
	}
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		// JobDisconnectedDate says, while it is set, since when the job
		// runs out of its shadow's reach.
		c := change{AttrJobDisconnectedDate: classad.Int(time.Now().Unix())}
		if ev.Type != shadow.EventDisconnected {
			c[AttrJobDisconnectedDate] = classad.Undefined()
		}
		if ev.Type == shadow.EventReconnected {
			n, _ := ad.EvalInt(AttrNumJobReconnects)
			c[AttrNumJobReconnects] = classad.Int(n + 1)
		}
		return step{set: c, log: logs(e)}, nil
	})
	if err != nil {
		a.log.Warn("record reconnection", "job", r.id, "event", ev.Type, "err", err)
	}
}

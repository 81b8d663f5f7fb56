package agent

import (
	"os"
	"path/filepath"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// evictedOnRestart is logged for jobs that were running when the agent died.
var evictedOnRestart = joblog.Event{Type: joblog.Evicted, Reason: "the agent restarted; the job will run again"}

// logSubmit writes the job's submit event.
func (a *Agent) logSubmit(ad *classad.ClassAd) {
	a.logEvent(ad, joblog.Event{Type: joblog.Submit, Host: a.cfg.AdvertiseAddr})
}

// logEvent appends ev to the job's event log, if it has one (its UserLog
// attribute). A log that cannot be written is reported, not fatal: the
// queue, not the log, is the job's record.
func (a *Agent) logEvent(ad *classad.ClassAd, ev joblog.Event) {
	path, ok := ad.EvalString("UserLog")
	if !ok || path == "" {
		return
	}
	if !filepath.IsAbs(path) {
		iwd, _ := ad.EvalString("Iwd")
		path = filepath.Join(iwd, path)
	}
	id := jobID(ad)
	ev.Cluster, ev.Proc = id.Cluster, id.Proc
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	owner, _ := ad.EvalString("Owner")
	_, statErr := os.Stat(path)
	if err := joblog.Append(path, ev); err != nil {
		a.log.Warn("write job event log", "job", id, "path", path, "err", err)
		return
	}
	if os.IsNotExist(statErr) {
		// The agent created the log: give it to the job's owner.
		if cred, err := credentialFor(owner); err == nil && cred != nil {
			_ = os.Chown(path, int(cred.Uid), int(cred.Gid))
		}
	}
}

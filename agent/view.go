package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// A read-only view of the queue for the agent's status pages: the same
// jobs harrier q lists, nothing it may change.

// Jobs calls fn with each job in the queue, in job id order, until fn
// returns false. The ads are shared: fn must not change them.
func (a *Agent) Jobs(fn func(ad *classad.ClassAd) bool) {
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) {
			return true
		}
		return fn(ad)
	})
}

// Job returns the ad of job cluster.proc, from the queue or, if it left
// it, from the history (the newest record of it there).
func (a *Agent) Job(cluster, proc int) (*classad.ClassAd, bool) {
	id := jobqueue.JobID{Cluster: cluster, Proc: proc}
	if !isJob(id) {
		return nil, false
	}
	if ad, ok := a.queue.Get(id); ok {
		return ad, true
	}
	var found *classad.ClassAd
	err := a.queue.History(func(ad *classad.ClassAd) bool {
		if jobID(ad) == id {
			found = ad
		}
		return true
	})
	return found, err == nil && found != nil
}

// maxEventLogBytes bounds how much of a job's event log JobEvents reads:
// a log several jobs share (a DAG's) can grow large.
const maxEventLogBytes = 8 << 20

// JobEvents reads the events of the job ad's event log (its UserLog), as
// the job's owner: the path is the submitter's, so the agent, running as
// root, reads only what the owner could (and no symbolic link as the last
// component). It returns none for a job without a log, and only this
// job's events from a log several jobs share.
func (a *Agent) JobEvents(ad *classad.ClassAd) ([]joblog.Event, error) {
	path, ok := ad.EvalString(AttrUserLog)
	if !ok || path == "" {
		return nil, nil
	}
	if !filepath.IsAbs(path) {
		iwd, _ := ad.EvalString(AttrIwd)
		path = filepath.Join(iwd, path)
	}
	owner, _ := ad.EvalString(AttrOwner)
	cred, err := asuser.Lookup(owner)
	if err != nil {
		return nil, fmt.Errorf("read job event log: %w", err)
	}
	// Non-blocking, so that a FIFO in the log's place cannot hold the
	// page up; then only a regular file is read.
	f, err := asuser.OpenFile(cred, path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read job event log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read job event log: %s is not a regular file", path)
	}
	events, err := joblog.Read(io.LimitReader(f, maxEventLogBytes))
	if err != nil && len(events) == 0 {
		return nil, fmt.Errorf("read job event log %s: %w", path, err)
	}
	id := jobID(ad)
	mine := events[:0]
	for _, ev := range events {
		if ev.Cluster == id.Cluster && ev.Proc == id.Proc {
			mine = append(mine, ev)
		}
	}
	return mine, nil
}

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// evictedOnRestart is logged for jobs that were running when the agent died.
var evictedOnRestart = joblog.Event{Type: joblog.Evicted, Reason: "the agent restarted; the job will run again"}

// submitEvent is a job's submit event. A DAG node's names its node, as
// HTCondor's does: DAGMan's recovery finds its nodes' jobs by it.
func (a *Agent) submitEvent(ad *classad.ClassAd) joblog.Event {
	node, _ := ad.EvalString(AttrDAGNodeName)
	notes, _ := ad.EvalString(AttrSubmitEventNotes)
	return stamp(ad, []joblog.Event{{Type: joblog.Submit, Host: a.cfg.AdvertiseAddr, DAGNode: node, Notes: notes}})[0]
}

// eventStore is a queue that records job events in the transaction of the
// move that makes them (pgqueue's job_events).
type eventStore interface {
	CommitEvents(ctx context.Context, txn *jobqueue.Txn, events []joblog.Event) error
}

// commit commits txn, with the events its moves make if the queue keeps
// events.
func (a *Agent) commit(ctx context.Context, txn *jobqueue.Txn, events []joblog.Event) error {
	if es, ok := a.queue.(eventStore); ok && len(events) > 0 {
		return es.CommitEvents(ctx, txn, events)
	}
	return a.queue.Commit(ctx, txn)
}

// stamp fills in the job and, if not set, the time of events of the job
// ad.
func stamp(ad *classad.ClassAd, events []joblog.Event) []joblog.Event {
	id := jobID(ad)
	now := time.Now()
	info := adInformation(ad)
	out := make([]joblog.Event, 0, len(events))
	for _, ev := range events {
		ev.Cluster, ev.Proc = id.Cluster, id.Proc
		if ev.Time.IsZero() {
			ev.Time = now
		}
		out = append(out, ev)
		// As HTCondor's: after each event, one with the attributes the
		// job's job_ad_information_attrs names.
		if info != "" && ev.Type != joblog.JobAdInformation {
			out = append(out, joblog.Event{Type: joblog.JobAdInformation, Cluster: id.Cluster, Proc: id.Proc, Time: ev.Time,
				Ad: fmt.Sprintf("TriggerEventTypeNumber = %d\n%s", int(ev.Type), info)})
		}
	}
	return out
}

// adInformation is the text of a JobAdInformation event of the job of
// ad: "Name = value" for each attribute its JobAdInformationAttrs names
// and it has; "" if it names none.
func adInformation(ad *classad.ClassAd) string {
	var b strings.Builder
	for _, n := range attrNames(ad, AttrJobAdInformationAttrs) {
		if e, ok := ad.Lookup(n); ok {
			fmt.Fprintf(&b, "%s = %s\n", n, ad.EvalExpr(e, nil))
		}
	}
	return b.String()
}

// logEvent appends ev to the job's event log, if it has one (its UserLog
// attribute). The path is the submitter's, so the log is opened with the
// job owner's own permissions (and a symbolic link as its last component
// is refused): the agent, running as root, never writes where the owner
// could not. A log that cannot be written is reported, not fatal: the
// queue, not the log, is the job's record.
func (a *Agent) logEvent(ad *classad.ClassAd, ev joblog.Event) {
	path, ok := ad.EvalString(AttrUserLog)
	if !ok || path == "" {
		return
	}
	if !filepath.IsAbs(path) {
		iwd, _ := ad.EvalString(AttrIwd)
		path = filepath.Join(iwd, path)
	}
	id := jobID(ad)
	ev = stamp(ad, []joblog.Event{ev})[0]
	owner, _ := ad.EvalString(AttrOwner)
	if err := appendAs(owner, path, ev); err != nil {
		a.log.Warn("write job event log", "job", id, "path", path, "err", err)
	}
}

// logEvents logs each job's event, events[i] of ads[i], as logEvent does,
// but opens, writes and syncs each log once for all the events it gets, in
// their order: a submission of a DAG's ready nodes, a cluster per node,
// writes them all to the DAG's one nodes log.
func (a *Agent) logEvents(ads []*classad.ClassAd, events []joblog.Event) {
	type logFile struct{ owner, path string }
	var order []logFile
	byLog := make(map[logFile][]joblog.Event)
	for i, ad := range ads {
		path, ok := ad.EvalString(AttrUserLog)
		if !ok || path == "" {
			continue
		}
		if !filepath.IsAbs(path) {
			iwd, _ := ad.EvalString(AttrIwd)
			path = filepath.Join(iwd, path)
		}
		owner, _ := ad.EvalString(AttrOwner)
		k := logFile{owner, path}
		if _, ok := byLog[k]; !ok {
			order = append(order, k)
		}
		byLog[k] = append(byLog[k], stamp(ad, events[i:i+1])...)
	}
	for _, k := range order {
		if err := appendAs(k.owner, k.path, byLog[k]...); err != nil {
			a.log.Warn("write job event log", "job", fmt.Sprintf("%d.%d", byLog[k][0].Cluster, byLog[k][0].Proc), "path", k.path, "events", len(byLog[k]), "err", err)
		}
	}
}

// appendAs appends events to the log at path as the user owner.
func appendAs(owner, path string, events ...joblog.Event) error {
	cred, err := asuser.Lookup(owner)
	if err != nil {
		return err
	}
	f, err := asuser.OpenFile(cred, path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open job event log: %w", err)
	}
	if err := joblog.AppendFile(f, events...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

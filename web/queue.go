package web

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/timeseries"
)

// A Queue is what an agent's pages read of it (*agent.Agent).
type Queue interface {
	// Jobs calls fn with each job in the queue until fn returns false.
	Jobs(fn func(ad *classad.ClassAd) bool)
	// Job returns a job's ad from the queue or its history.
	Job(cluster, proc int) (*classad.ClassAd, bool)
	// JobEvents reads a job's event log.
	JobEvents(ad *classad.ClassAd) ([]joblog.Event, error)
}

// QueueSeries are the series of an agent's history: its jobs by state.
var QueueSeries = []string{"running", "idle", "held"}

// QueueSample counts the queue's jobs by state, as the values of
// QueueSeries.
func QueueSample(q Queue) []float64 {
	values := make([]float64, len(QueueSeries))
	q.Jobs(func(ad *classad.ClassAd) bool {
		n, _ := ad.EvalInt("JobStatus")
		switch agent.JobStatus(n) {
		case agent.Running:
			values[0]++
		case agent.Idle:
			values[1]++
		case agent.Held:
			values[2]++
		}
		return true
	})
	return values
}

// maxJobRows is the most jobs the job table lists; a filter narrows it.
const maxJobRows = 1000

// jobStates are the job states, as harrier q names them.
var jobStates = []agent.JobStatus{agent.Idle, agent.Running, agent.Held, agent.Suspended, agent.Completed, agent.Removed, agent.TransferringOutput}

type queuePages struct {
	queue   Queue
	history *timeseries.Store
	name    string
	logger  *slog.Logger
	list    *template.Template
	job     *template.Template
}

// NewQueue returns the handler of an agent's pages: the queue's history
// and its jobs at /, filtered by the query parameters owner, state (a
// name, as harrier q shows it) and constraint, and a job's page at
// /job/CLUSTER.PROC. name names the agent; history has QueueSeries.
func NewQueue(queue Queue, history *timeseries.Store, name string, logger *slog.Logger) http.Handler {
	p := &queuePages{queue: queue, history: history, name: name, logger: logger,
		list: parsePage("queue.html"), job: parsePage("job.html")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveList)
	mux.HandleFunc("GET /job/{id}", p.serveJob)
	return mux
}

func (p *queuePages) page(title string) page {
	return page{Title: title, Daemon: p.name, Now: time.Now(), Nav: []link{{"/", "Queue"}}}
}

// jobRow is a job as the job table and its page show it.
type jobRow struct {
	ID, Owner, Batch, Command, Submitted, State, Reason string
	Starts                                              int64
}

func newJobRow(ad *classad.ClassAd) jobRow {
	var j jobRow
	c, _ := ad.EvalInt("ClusterId")
	pr, _ := ad.EvalInt("ProcId")
	j.ID = fmt.Sprintf("%d.%d", c, pr)
	j.Owner, _ = ad.EvalString("Owner")
	j.Batch, _ = ad.EvalString("JobBatchName")
	cmd, _ := ad.EvalString("Cmd")
	args, _ := ad.EvalString("Arguments")
	j.Command = strings.TrimSpace(cmd + " " + args)
	q, _ := ad.EvalInt("QDate")
	j.Submitted = unixTime(q)
	st, _ := ad.EvalInt("JobStatus")
	j.State = agent.JobStatus(st).String()
	if agent.JobStatus(st) == agent.Held {
		j.Reason, _ = ad.EvalString("HoldReason")
	} else if agent.JobStatus(st) == agent.Removed {
		j.Reason, _ = ad.EvalString("RemoveReason")
	}
	j.Starts, _ = ad.EvalInt("NumJobStarts")
	return j
}

func (p *queuePages) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sp, ranges := pickSpan(r, p.history)
	data := struct {
		page
		Plots  []plot
		Filter struct{ Owner, State, Constraint string }
		States []string
		Jobs   []jobRow
		More   bool
	}{page: p.page("Queue")}
	data.Ranges = ranges
	data.Plots = []plot{newPlot("Jobs over time", p.history.Points(sp.Step), QueueSeries, QueueSeries, time.Now(), sp.Step)}
	data.Filter.Owner, data.Filter.State, data.Filter.Constraint = q.Get("owner"), q.Get("state"), q.Get("constraint")
	for _, s := range jobStates {
		data.States = append(data.States, s.String())
	}
	cons, err := jobConstraint(data.Filter.Owner, data.Filter.State, data.Filter.Constraint)
	if err != nil {
		data.Error = err.Error()
		render(w, p.logger, p.list, http.StatusBadRequest, data)
		return
	}
	p.queue.Jobs(func(ad *classad.ClassAd) bool {
		if !cons.IsZero() && !ad.EvalExpr(cons, nil).IsTrue() {
			return true
		}
		if len(data.Jobs) == maxJobRows {
			data.More = true
			return false
		}
		data.Jobs = append(data.Jobs, newJobRow(ad))
		return true
	})
	render(w, p.logger, p.list, http.StatusOK, data)
}

// jobConstraint is the job table's filter: the owner, the state by name,
// and a constraint, all of which must hold.
func jobConstraint(owner, state, constraint string) (classad.Expr, error) {
	var parts []string
	if strings.TrimSpace(constraint) != "" {
		if _, err := classad.ParseExpr(constraint); err != nil {
			return classad.Expr{}, fmt.Errorf("constraint: %w", err)
		}
		parts = append(parts, "("+constraint+")")
	}
	if owner != "" {
		parts = append(parts, "Owner == "+classad.String(owner).String())
	}
	if state != "" {
		n := 0
		for _, s := range jobStates {
			if strings.EqualFold(s.String(), state) {
				n = int(s)
			}
		}
		if n == 0 {
			return classad.Expr{}, fmt.Errorf("state %q: want one of Idle, Running, Held, Suspended, Completed, Removed, TransferringOutput", state)
		}
		parts = append(parts, fmt.Sprintf("JobStatus == %d", n))
	}
	if len(parts) == 0 {
		return classad.Expr{}, nil
	}
	return classad.ParseExpr(strings.Join(parts, " && "))
}

// fileIO is one file's line of the remote I/O table.
type fileIO struct {
	Name                                               string
	Opens, Reads, ReadBytes, Writes, WriteBytes, Seeks int64
	Seconds                                            float64
}

// eventRow is an event as the job's page lists it.
type eventRow struct{ Time, What, Detail string }

// eventNames name the events as HTCondor's log headers do.
var eventNames = map[joblog.Type]string{
	joblog.Submit: "Submitted", joblog.Execute: "Executing", joblog.ExecutableError: "Executable error",
	joblog.Checkpointed: "Checkpointed", joblog.Evicted: "Evicted", joblog.Terminated: "Terminated",
	joblog.ImageSize: "Image size", joblog.ShadowException: "Shadow exception", joblog.Aborted: "Aborted",
	joblog.Suspended: "Suspended", joblog.Unsuspended: "Unsuspended", joblog.Held: "Held",
	joblog.Released: "Released", joblog.JobDisconnected: "Disconnected", joblog.JobReconnected: "Reconnected",
	joblog.JobReconnectFailed: "Reconnect failed", joblog.PostScriptTerminated: "POST script terminated",
	joblog.JobAdInformation: "Job ad information", joblog.PreSkip: "PRE skip", joblog.FileTransfer: "File transfer",
}

func eventName(t joblog.Type) string {
	if n, ok := eventNames[t]; ok {
		return n
	}
	return fmt.Sprintf("event %03d", int(t))
}

// ckptHistory is the job's checkpoints: the ad's record of the last ones
// and the events of its log that took or used one.
type ckptHistory struct {
	Count, LastSize, LastImage, SelfCount, SelfSize, Failures int64
	Last, SelfLast, FailureTime, Failure, Frozen, Dump        string
	Events                                                    []eventRow
}

func (p *queuePages) serveJob(w http.ResponseWriter, r *http.Request) {
	var cluster, proc int
	id := r.PathValue("id")
	if _, err := fmt.Sscanf(id, "%d.%d", &cluster, &proc); err != nil || fmt.Sprintf("%d.%d", cluster, proc) != id {
		http.Error(w, "a job is named CLUSTER.PROC", http.StatusNotFound)
		return
	}
	ad, ok := p.queue.Job(cluster, proc)
	if !ok {
		http.Error(w, "no job "+id+" in this agent's queue or history", http.StatusNotFound)
		return
	}
	data := struct {
		page
		Job         jobRow
		IO          fileIO
		Files       []fileIO
		Ckpt        ckptHistory
		Events      []eventRow
		EventsError string
		Ad          string
	}{page: p.page("Job " + id), Job: newJobRow(ad), Ad: ad.String()}
	// IO holds the totals over all runs, its Files the last run's files.
	data.IO.Reads, _ = ad.EvalInt("FileReadCount")
	data.IO.ReadBytes, _ = ad.EvalInt("FileReadBytes")
	data.IO.Writes, _ = ad.EvalInt("FileWriteCount")
	data.IO.WriteBytes, _ = ad.EvalInt("FileWriteBytes")
	data.IO.Seeks, _ = ad.EvalInt("FileSeekCount")
	if list, ok := ad.Eval("RemoteIOFiles").ListValue(); ok {
		for _, v := range list {
			fa, ok := v.ClassAdValue()
			if !ok {
				continue
			}
			var f fileIO
			f.Name, _ = fa.EvalString("Name")
			f.Opens, _ = fa.EvalInt("OpenCount")
			f.Reads, _ = fa.EvalInt("ReadCount")
			f.ReadBytes, _ = fa.EvalInt("ReadBytes")
			f.Writes, _ = fa.EvalInt("WriteCount")
			f.WriteBytes, _ = fa.EvalInt("WriteBytes")
			f.Seeks, _ = fa.EvalInt("SeekCount")
			f.Seconds, _ = fa.EvalReal("Seconds")
			data.Files = append(data.Files, f)
		}
	}
	data.Ckpt = checkpoints(ad)
	events, err := p.queue.JobEvents(ad)
	if err != nil {
		data.EventsError = err.Error()
	}
	for _, ev := range events {
		row := eventRow{Time: when(ev.Time), What: eventName(ev.Type), Detail: ev.Format()}
		data.Events = append(data.Events, row)
		switch {
		case ev.Type == joblog.Checkpointed:
			data.Ckpt.Events = append(data.Ckpt.Events, eventRow{row.Time, "checkpoint taken", ""})
		case ev.Type == joblog.Evicted && ev.WasCheckpointed:
			data.Ckpt.Events = append(data.Ckpt.Events, eventRow{row.Time, "evicted with a checkpoint", ev.Reason})
		case ev.Type == joblog.Execute && ev.Reason != "":
			data.Ckpt.Events = append(data.Ckpt.Events, eventRow{row.Time, "started", ev.Reason})
		}
	}
	render(w, p.logger, p.job, http.StatusOK, data)
}

// checkpoints reads the job ad's checkpoint record.
func checkpoints(ad *classad.ClassAd) ckptHistory {
	var c ckptHistory
	secs := func(name string) string {
		if v, ok := ad.EvalReal(name); ok {
			return fmt.Sprintf("%.3f", v)
		}
		return "?"
	}
	c.Count, _ = ad.EvalInt("NumCkpts")
	t, _ := ad.EvalInt("LastCkptTime")
	c.Last = unixTime(t)
	c.LastSize, _ = ad.EvalInt("LastCkptSize")
	c.LastImage, _ = ad.EvalInt("LastCkptImageSize")
	c.Frozen, c.Dump = secs("LastCkptFrozenTime"), secs("LastCkptDumpTime")
	c.SelfCount, _ = ad.EvalInt("NumSelfCheckpoints")
	t, _ = ad.EvalInt("LastSelfCheckpointTime")
	c.SelfLast = unixTime(t)
	c.SelfSize, _ = ad.EvalInt("LastSelfCheckpointSize")
	c.Failures, _ = ad.EvalInt("NumCheckpointFailures")
	c.Failure, _ = ad.EvalString("LastCheckpointFailure")
	t, _ = ad.EvalInt("LastCheckpointFailureTime")
	c.FailureTime = unixTime(t)
	return c
}

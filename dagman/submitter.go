package dagman

import "context"

// A Submitter queues nodes' jobs in a scheduler and removes them. It is
// all the engine knows of the pool: what happens to a job afterwards it
// learns from the job event log, as condor_dagman does.
type Submitter interface {
	// Submit queues j's submit file (or, for a SUBDAG EXTERNAL node, its
	// DAG) and returns the cluster and how many procs it has. Every event
	// of those procs, starting with one submit event each whose DAGNode
	// is j.Node, must be appended to j.Log; the submit events must be
	// there when Submit returns. An error means nothing was queued.
	Submit(ctx context.Context, j Job) (cluster, procs int, err error)
	// Remove removes what is left of a cluster; its procs' aborted
	// events follow in the log.
	Remove(ctx context.Context, cluster int) error
}

// A BatchSubmitter is a Submitter that queues several nodes' jobs at
// once, for about the cost of one: the engine hands it the nodes it
// submits in one go.
type BatchSubmitter interface {
	Submitter
	// SubmitBatch queues each of jobs as Submit would, and returns what
	// became of each, in order. An error in one does not keep the others
	// from being queued.
	SubmitBatch(ctx context.Context, jobs []Job) []Submitted
}

// Submitted is what became of one job of a batch: its cluster and how
// many procs it has, or the error that kept it from being queued.
type Submitted struct {
	Cluster, Procs int
	Err            error
}

// A Notifier is a Submitter that can tell the engine that it has just
// appended events to the log, so the engine need not wait for its next
// look at the log.
type Notifier interface {
	Notify() <-chan struct{}
}

// A Job is what Submit needs to queue one node's job.
type Job struct {
	// Node is the node's name, for the submit event's "DAG Node:" note
	// and the job's DAGNodeName attribute.
	Node string
	// File is the submit file, or the DAG file of a SUBDAG EXTERNAL node;
	// relative to Dir unless absolute.
	File   string
	SubDAG bool
	// Dir is the directory to submit from.
	Dir string
	// Log is the job event log all the DAG's node jobs write (the
	// submit file's log command is overridden).
	Log string
	// Vars are the macros for the submit file: JOB (the node's name) and
	// RETRY first (and DAG_STATUS and FAILED_COUNT for the FINAL node),
	// then the node's VARS with $(JOB) and $(RETRY) replaced.
	Vars []Var
	// Priority is the node's PRIORITY, the job's priority.
	Priority int
	// Retry counts the node's earlier tries.
	Retry int
}

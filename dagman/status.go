package dagman

// Status is a node's state, with HTCondor's numbers (the node status
// file's NodeStatus).
type Status uint8

const (
	StatusNotReady  Status = iota // waiting for parents
	StatusReady                   // waiting for a throttle
	StatusPreRun                  // PRE script running
	StatusSubmitted               // job queued
	StatusPostRun                 // POST script running
	StatusDone
	StatusError
	StatusFutile // never to run: an ancestor failed
)

func (s Status) String() string {
	return [...]string{"STATUS_NOT_READY", "STATUS_READY", "STATUS_PRERUN", "STATUS_SUBMITTED",
		"STATUS_POSTRUN", "STATUS_DONE", "STATUS_ERROR", "STATUS_FUTILE"}[s]
}

// DAGStatus is the DAG's state, HTCondor's $DAG_STATUS. (HTCondor's 1,
// DAGMan's own error, is an error from Run here.)
type DAGStatus int

const (
	DAGStatusOK         DAGStatus = 0
	DAGStatusNodeFailed DAGStatus = 2
	DAGStatusAbort      DAGStatus = 3 // ABORT-DAG-ON
	DAGStatusRemoved    DAGStatus = 4
	DAGStatusHalted     DAGStatus = 6
)

func (s DAGStatus) String() string {
	switch s {
	case DAGStatusOK:
		return "DAG_STATUS_OK"
	case DAGStatusNodeFailed:
		return "DAG_STATUS_NODE_FAILED"
	case DAGStatusAbort:
		return "DAG_STATUS_ABORT"
	case DAGStatusRemoved:
		return "DAG_STATUS_RM"
	case DAGStatusHalted:
		return "DAG_STATUS_HALTED"
	}
	return "DAG_STATUS_UNKNOWN"
}

package agent

// Job states, numbered as HTCondor numbers JobStatus.
const (
	Idle      = 1
	Running   = 2
	Removed   = 3
	Completed = 4
	Held      = 5
	Suspended = 7
)

// Hold reason codes, as HTCondor numbers HoldReasonCode.
const (
	holdByUser      = 1
	holdByJobPolicy = 3
)

package agent

import (
	"strconv"

	"harrier.dev/harrier/classad"
)

// JobStatus is a job's state, numbered as HTCondor numbers JobStatus, so
// that constraints such as JobStatus == 5 mean what HTCondor users expect.
type JobStatus int

// The job states. The agent never puts a job in TransferringOutput (its
// output is written through the shadow while it runs); the value is
// named so that ads from elsewhere read correctly.
const (
	Idle               JobStatus = 1
	Running            JobStatus = 2
	Removed            JobStatus = 3
	Completed          JobStatus = 4
	Held               JobStatus = 5
	TransferringOutput JobStatus = 6
	Suspended          JobStatus = 7
)

// String names the state as condor_q's long form does.
func (s JobStatus) String() string {
	switch s {
	case Idle:
		return "Idle"
	case Running:
		return "Running"
	case Removed:
		return "Removed"
	case Completed:
		return "Completed"
	case Held:
		return "Held"
	case TransferringOutput:
		return "TransferringOutput"
	case Suspended:
		return "Suspended"
	}
	return "JobStatus(" + strconv.Itoa(int(s)) + ")"
}

// value is the state as a job ad holds it.
func (s JobStatus) value() classad.Value { return classad.Int(int64(s)) }

// statusOf reads a job ad's JobStatus; 0 if it has none.
func statusOf(ad *classad.ClassAd) JobStatus {
	n, _ := ad.EvalInt(AttrJobStatus)
	return JobStatus(n)
}

// Hold reason codes, as HTCondor numbers HoldReasonCode.
const (
	holdByUser      = 1
	holdByJobPolicy = 3
	// allowed_job_duration and allowed_execute_duration exceeded.
	holdJobDurationExceeded     = 46
	holdExecuteDurationExceeded = 47
)

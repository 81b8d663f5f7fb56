package reservation

import (
	"time"

	"harrier.dev/harrier/classad"
)

// Attributes of job and machine ads that reservations read.
const (
	// AttrReservationID in a job ad names the reservation the job runs
	// in (submit: +ReservationId = "rsv3"); in a machine ad, the
	// reservation of the job running there.
	AttrReservationID = "ReservationId"
	// AttrEstimatedRunTime is a job's declared run time in seconds
	// (submit: +EstimatedRunTime = 600), the paper's wallTime.
	AttrEstimatedRunTime = "EstimatedRunTime"
)

// A Node is one machine as the paper's Table 2 describes an execute
// node, with its running jobs as Table 3 describes them.
type Node struct {
	Name    string
	IsAlive bool
	LoadAvg float64
	Jobs    []Job
}

// A Job is a job running on a node.
type Job struct {
	ID       string
	Owner    string
	State    string // Running, Suspended or Exiting
	Priority int64
	Start    time.Time     // zero: not known
	WallTime time.Duration // zero: not declared
}

// NodeOf maps a Harrier machine (slot) ad onto a node record:
//
//	name       Name, the slot ("slot1@host")
//	isAlive    the startd advertises it (the ad is live), and it is
//	           neither in the Owner state nor Draining
//	loadavg    LoadAvg
//	nRunJobs   the jobs whose state is Running: 0 or 1 per slot
//	jobs       the job of the slot's claim, if one runs (JobId)
//
// and the job there:
//
//	id         JobId ("cluster.proc")
//	owner      RemoteOwner
//	state      Running (Activity Busy), Suspended, or Exiting (State
//	           Preempting: being vacated)
//	priority   JobPrio
//	startTime  JobStart
//	wallTime   EstimatedRunTime, undefined if the job declares none
func NodeOf(ad *classad.ClassAd) Node {
	n := Node{}
	n.Name, _ = ad.EvalString("Name")
	state, _ := ad.EvalString("State")
	draining, _ := ad.EvalBool("Draining")
	n.IsAlive = state != "Owner" && !draining
	n.LoadAvg, _ = ad.EvalReal("LoadAvg")
	id, ok := ad.EvalString("JobId")
	activity, _ := ad.EvalString("Activity")
	if !ok || state == "Claimed" && activity == "Idle" {
		return n
	}
	j := Job{ID: id, State: "Running"}
	switch {
	case state == "Preempting":
		j.State = "Exiting"
	case activity == "Suspended":
		j.State = "Suspended"
	}
	j.Owner, _ = ad.EvalString("RemoteOwner")
	j.Priority, _ = ad.EvalInt("JobPrio")
	if s, ok := ad.EvalInt("JobStart"); ok {
		j.Start = time.Unix(s, 0)
	}
	if w, ok := ad.EvalReal(AttrEstimatedRunTime); ok && w > 0 {
		j.WallTime = time.Duration(w * float64(time.Second))
	}
	n.Jobs = []Job{j}
	return n
}

// record returns n as the ClassAd record a policy sees.
func (n Node) record() classad.Value {
	ad := classad.New()
	ad.SetString("name", n.Name)
	ad.SetBool("isAlive", n.IsAlive)
	ad.SetReal("loadavg", n.LoadAvg)
	running := 0
	jobs := make([]classad.Value, len(n.Jobs))
	for i, j := range n.Jobs {
		if j.State == "Running" {
			running++
		}
		jobs[i] = j.record()
	}
	ad.SetInt("nRunJobs", int64(running))
	ad.SetValue("jobs", classad.ListOf(jobs))
	return classad.AdValue(ad)
}

func (j Job) record() classad.Value {
	ad := classad.New()
	ad.SetString("id", j.ID)
	ad.SetString("owner", j.Owner)
	ad.SetString("state", j.State)
	ad.SetInt("priority", j.Priority)
	if !j.Start.IsZero() {
		ad.SetValue("startTime", absTime(j.Start))
	}
	if j.WallTime > 0 {
		ad.SetValue("wallTime", classad.RelTime(j.WallTime.Seconds()))
	}
	return classad.AdValue(ad)
}

// absTime is t as a ClassAd absolute time, shown in UTC.
func absTime(t time.Time) classad.Value { return classad.AbsTime(t.Unix(), 0) }

package startd

import (
	"errors"
	"fmt"

	"harrier.dev/harrier/classad"
)

// State is a slot's state, named as in HTCondor.
type State string

// The slot states.
const (
	Owner      State = "Owner"
	Unclaimed  State = "Unclaimed"
	Matched    State = "Matched"
	Claimed    State = "Claimed"
	Preempting State = "Preempting"
)

// Activity is what a slot is doing within its state, named as in HTCondor.
type Activity string

// The slot activities.
const (
	Idle      Activity = "Idle"
	Busy      Activity = "Busy"
	Suspended Activity = "Suspended"
	Vacating  Activity = "Vacating"
	Killing   Activity = "Killing"
)

// Status is a slot's state and activity, the pair a machine ad shows.
type Status struct {
	State    State
	Activity Activity
}

// String returns "State/Activity", as condor_status users read it.
func (s Status) String() string { return string(s.State) + "/" + string(s.Activity) }

// ErrIllegalTransition is matched by every *TransitionError.
var ErrIllegalTransition = errors.New("illegal slot transition")

// TransitionError reports a move the slot state machine does not allow.
type TransitionError struct {
	Slot     string
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s: cannot go from %s to %s", e.Slot, e.From, e.To)
}

// Is makes errors.Is(err, ErrIllegalTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// A phase is one state of a slot together with the data that state owns:
// the claim id while matched, the claim while claimed, the starter while a
// job runs. Holding the data in the state makes it impossible to, say, have
// a running starter on an unclaimed slot.
type phase interface {
	status() Status
	// follows reports whether the slot may move from prev to this phase.
	follows(prev phase) bool
}

// owner: the machine's owner is using it (IS_OWNER is true); the slot
// takes no match.
type owner struct{}

// unclaimed: the slot is free and advertised for matching.
type unclaimed struct{}

// matched: the negotiator paired the slot with a job; it waits for the
// agent to claim it with claimID.
type matched struct{ claimID string }

// claimedIdle: an agent holds the slot and may start a job under the claim;
// starter, if not nil, is the starter of the claim's previous job, kept for
// the next one.
type claimedIdle struct {
	claim   *claim
	starter *starterProc
	// activating is set while ActivateClaim starts a job under the
	// claim, outside the startd's lock; the activation owns the kept
	// starter meanwhile.
	activating bool
}

// claimedBusy: a starter runs a job under the claim.
type claimedBusy struct {
	claim *claim
	run   *run
}

// claimedSuspended: the owner policy suspended the running job.
type claimedSuspended struct {
	claim *claim
	run   *run
}

// preemptingVacating: the job was asked to leave (the starter got
// SIGTERM) and has until MaxVacateTime to do so.
type preemptingVacating struct {
	claim *claim
	run   *run
	// pending is the claim id of the preempting match the job leaves
	// for, or "": once the starter is gone the slot is Matched under it,
	// for that claim and no other.
	pending string
}

// preemptingKilling: the claim is being released and its starter killed.
type preemptingKilling struct {
	claim   *claim
	run     *run
	pending string // as in preemptingVacating
}

func (owner) status() Status              { return Status{Owner, Idle} }
func (unclaimed) status() Status          { return Status{Unclaimed, Idle} }
func (matched) status() Status            { return Status{Matched, Idle} }
func (claimedIdle) status() Status        { return Status{Claimed, Idle} }
func (claimedBusy) status() Status        { return Status{Claimed, Busy} }
func (claimedSuspended) status() Status   { return Status{Claimed, Suspended} }
func (preemptingVacating) status() Status { return Status{Preempting, Vacating} }
func (preemptingKilling) status() Status  { return Status{Preempting, Killing} }

func (owner) follows(prev phase) bool {
	switch prev.(type) {
	case unclaimed, matched, claimedIdle, preemptingVacating, preemptingKilling:
		return true
	}
	return false
}

func (unclaimed) follows(prev phase) bool {
	switch prev.(type) {
	case owner, matched, claimedIdle, preemptingVacating, preemptingKilling:
		return true
	}
	return false
}

// A slot is Matched from Unclaimed, or for a preempting match: at once
// from Claimed/Idle (the idle claim is dropped), and from Preempting once
// the vacated job is gone.
func (matched) follows(prev phase) bool {
	switch prev.(type) {
	case unclaimed, claimedIdle, preemptingVacating, preemptingKilling:
		return true
	}
	return false
}

func (claimedIdle) follows(prev phase) bool {
	switch prev.(type) {
	case matched, claimedBusy, claimedSuspended:
		return true
	}
	return false
}

func (claimedBusy) follows(prev phase) bool {
	switch prev.(type) {
	case claimedIdle, claimedSuspended:
		return true
	}
	return false
}

func (claimedSuspended) follows(prev phase) bool {
	_, ok := prev.(claimedBusy)
	return ok
}

func (preemptingVacating) follows(prev phase) bool {
	switch prev.(type) {
	case claimedBusy, claimedSuspended:
		return true
	}
	return false
}

func (preemptingKilling) follows(prev phase) bool {
	switch prev.(type) {
	case claimedBusy, claimedSuspended, preemptingVacating:
		return true
	}
	return false
}

// claimOf returns the claim a phase holds, or nil.
func claimOf(p phase) *claim {
	switch p := p.(type) {
	case claimedIdle:
		return p.claim
	case claimedBusy:
		return p.claim
	case claimedSuspended:
		return p.claim
	case preemptingVacating:
		return p.claim
	case preemptingKilling:
		return p.claim
	}
	return nil
}

// pendingOf returns the claim id of the preempting match a phase holds
// the slot for, or "".
func pendingOf(p phase) string {
	switch p := p.(type) {
	case preemptingVacating:
		return p.pending
	case preemptingKilling:
		return p.pending
	}
	return ""
}

// runOf returns the starter a phase holds, or nil.
func runOf(p phase) *run {
	switch p := p.(type) {
	case claimedBusy:
		return p.run
	case claimedSuspended:
		return p.run
	case preemptingVacating:
		return p.run
	case preemptingKilling:
		return p.run
	}
	return nil
}

// claim is an agent's hold on a slot. It is immutable once made.
type claim struct {
	id string
	// agent is the claiming agent's name (ClaimedBy).
	agent string
	// holder is the verified identity of the claiming agent's
	// certificate: only it may activate, renew or release the claim.
	holder string
	// owner and jobID describe the job the claim was made for
	// (RemoteOwner, JobId).
	owner string
	jobID string
	// job is the ad of the job the claim was made for, against which the
	// policy is evaluated while no job runs; it is only read.
	job *classad.ClassAd
}

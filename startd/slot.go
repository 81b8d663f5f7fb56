package startd

import (
	"fmt"
	"time"

	"harrier.dev/harrier/classad"
)

// slot is one share of the machine, advertised as its own ad. Its fields
// are guarded by the owning Startd's mutex.
type slot struct {
	id   int    // SlotID, from 1
	name string // "slot1@host"

	phase           phase
	enteredState    time.Time
	enteredActivity time.Time
	// renewed is when the agent holding the claim last showed it is
	// alive (claim, activation, keepalive); the claim lease runs from it.
	renewed time.Time
}

func newSlot(id int, host string, now time.Time) *slot {
	return &slot{
		id:              id,
		name:            fmt.Sprintf("slot%d@%s", id, host),
		phase:           unclaimed{},
		enteredState:    now,
		enteredActivity: now,
	}
}

// short is the slot name without the host ("slot1").
func (sl *slot) short() string { return fmt.Sprintf("slot%d", sl.id) }

// moveTo changes the slot's phase, or returns a *TransitionError if the
// state machine does not allow the move.
func (sl *slot) moveTo(next phase, now time.Time) error {
	from, to := sl.phase.status(), next.status()
	if !next.follows(sl.phase) {
		return &TransitionError{Slot: sl.name, From: from, To: to}
	}
	sl.phase = next
	if from.State != to.State {
		sl.enteredState = now
	}
	if from != to {
		sl.enteredActivity = now
	}
	return nil
}

// view is a consistent copy of what the machine ad shows about a slot.
type view struct {
	id              int
	name            string
	status          Status
	enteredState    time.Time
	enteredActivity time.Time
	claim           *claim // nil unless claimed; claims are immutable
	// job is the ad of the running job or, with no job running, of the
	// job the claim was made for; nil without a claim. It is only read.
	job *classad.ClassAd
}

func (sl *slot) view() view {
	c := claimOf(sl.phase)
	var job *classad.ClassAd
	if r := runOf(sl.phase); r != nil {
		job = r.job
	} else if c != nil {
		job = c.job
	}
	return view{
		id:              sl.id,
		name:            sl.name,
		status:          sl.phase.status(),
		enteredState:    sl.enteredState,
		enteredActivity: sl.enteredActivity,
		claim:           c,
		job:             job,
	}
}

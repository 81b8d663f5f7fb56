package reservation

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// What a negotiation sees of the book. These are pure: ads and
// reservations in, ads and evictions out; the matchmaker carries them out.

// Schedule is the current reservations indexed for one negotiation.
type Schedule struct {
	now    time.Time
	byID   map[string]Reservation
	byNode map[string][]Reservation // each node's reservations, by start
}

// NewSchedule indexes rsvs (as [Book.Current] returns them, by start) at
// now.
func NewSchedule(rsvs []Reservation, now time.Time) *Schedule {
	s := &Schedule{now: now, byID: map[string]Reservation{}, byNode: map[string][]Reservation{}}
	for _, r := range rsvs {
		if !now.Before(r.End) {
			continue
		}
		s.byID[r.ID] = r
		for _, n := range r.Nodes {
			s.byNode[n] = append(s.byNode[n], r)
		}
	}
	return s
}

// Empty reports whether no reservation is current.
func (s *Schedule) Empty() bool { return len(s.byID) == 0 }

// active returns the reservation whose window holds now on node, if any.
func (s *Schedule) active(node string) (Reservation, bool) {
	for _, r := range s.byNode[node] {
		if r.Active(s.now) {
			return r, true
		}
	}
	return Reservation{}, false
}

// Confine returns the request ad a job of a reservation negotiates with:
// ad with its Requirements narrowed to the reservation's machines. ok is
// false if the request must not negotiate now: the reservation it names
// is unknown, not in its window, or another user's. Requests without
// ReservationId are returned as they are.
func (s *Schedule) Confine(ad *classad.ClassAd) (_ *classad.ClassAd, ok bool) {
	id, has := ad.EvalString(AttrReservationID)
	if !has {
		if !ad.Eval(AttrReservationID).IsUndefined() {
			return nil, false // not a string: matches nothing
		}
		return ad, true
	}
	r, found := s.byID[id]
	owner, _ := ad.EvalString("Owner")
	if !found || !r.Active(s.now) || owner != r.Owner {
		return nil, false
	}
	names := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		names[i] = strconv.Quote(n)
	}
	out := ad.Copy()
	if err := out.SetExpr("Requirements", fmt.Sprintf("(%s) && member(TARGET.Name, { %s })", requirements(ad), strings.Join(names, ", "))); err != nil {
		return nil, false
	}
	return out, true
}

// NarrowMachine returns the machine ad the negotiator is to see for a
// reserved machine: inside a window only the reservation's owner's jobs
// that name it match; before one, only jobs that name no reservation and
// do not declare (EstimatedRunTime) that they would run past its start.
// Machines no current reservation holds are returned as they are.
func (s *Schedule) NarrowMachine(ad *classad.ClassAd) *classad.ClassAd {
	name, _ := ad.EvalString("Name")
	rsvs := s.byNode[name]
	if len(rsvs) == 0 {
		return ad
	}
	var clause string
	if r, ok := s.active(name); ok {
		clause = fmt.Sprintf("TARGET.%s =?= %s && TARGET.Owner =?= %s", AttrReservationID, strconv.Quote(r.ID), strconv.Quote(r.Owner))
	} else {
		next := rsvs[0].Start
		for _, r := range rsvs {
			if r.Start.Before(next) {
				next = r.Start
			}
		}
		clause = fmt.Sprintf("TARGET.%s is undefined && (TARGET.%s is undefined || %d + TARGET.%s <= %d)",
			AttrReservationID, AttrEstimatedRunTime, s.now.Unix(), AttrEstimatedRunTime, next.Unix())
	}
	out := ad.Copy()
	if err := out.SetExpr("Requirements", fmt.Sprintf("(%s) && %s", requirements(ad), clause)); err != nil {
		return ad
	}
	return out
}

// requirements is the text of ad's Requirements, true if it has none.
func requirements(ad *classad.ClassAd) string {
	if e, ok := ad.Lookup("Requirements"); ok {
		return e.String()
	}
	return "true"
}

// An Eviction is a job, or an idle claim, to take off a slot.
type Eviction struct {
	Slot   string
	JobID  string // "" for a claim with no job running
	Reason string
}

// Evictions returns what must leave the machines whose ads are given: a
// reservation's job outside its window or off its machines, and at a
// window's start every other job, and claim, on its machines.
func (s *Schedule) Evictions(machines []*classad.ClassAd) []Eviction {
	var out []Eviction
	for _, ad := range machines {
		if st, _ := ad.EvalString("State"); st != "Claimed" {
			continue
		}
		slot, _ := ad.EvalString("Name")
		job, _ := ad.EvalString("JobId")
		id, reserved := ad.EvalString(AttrReservationID)
		owner, _ := ad.EvalString("RemoteOwner")
		r, active := s.active(slot)
		switch {
		case reserved && !(active && r.ID == id && r.Owner == owner):
			out = append(out, Eviction{Slot: slot, JobID: job, Reason: fmt.Sprintf("reservation %s is not in its window on %s", id, slot)})
		case !reserved && active && (job != "" || owner != r.Owner):
			out = append(out, Eviction{Slot: slot, JobID: job, Reason: fmt.Sprintf("reservation %s of %s starts on %s", r.ID, r.Owner, slot)})
		}
	}
	return out
}

// NextChange returns the first start or end of a current reservation
// after now, or the zero time if there is none.
func (s *Schedule) NextChange() time.Time {
	var next time.Time
	for _, r := range s.byID {
		for _, t := range []time.Time{r.Start, r.End} {
			if t.After(s.now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

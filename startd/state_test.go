package startd

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSlotTransitions(t *testing.T) {
	c := &claim{id: "c1"}
	r := &run{}
	phases := map[string]phase{
		"owner":      owner{},
		"unclaimed":  unclaimed{},
		"matched":    matched{claimID: "c1"},
		"claimed":    claimedIdle{claim: c},
		"busy":       claimedBusy{claim: c, run: r},
		"suspended":  claimedSuspended{claim: c, run: r},
		"vacating":   preemptingVacating{claim: c, run: r},
		"preempting": preemptingKilling{claim: c, run: r},
	}
	legal := map[[2]string]bool{
		{"owner", "unclaimed"}:      true,
		{"unclaimed", "owner"}:      true,
		{"unclaimed", "matched"}:    true,
		{"matched", "owner"}:        true,
		{"matched", "unclaimed"}:    true,
		{"matched", "claimed"}:      true,
		{"claimed", "matched"}:      true,
		{"vacating", "matched"}:     true,
		{"preempting", "matched"}:   true,
		{"claimed", "busy"}:         true,
		{"claimed", "unclaimed"}:    true,
		{"claimed", "owner"}:        true,
		{"busy", "claimed"}:         true,
		{"busy", "suspended"}:       true,
		{"busy", "vacating"}:        true,
		{"busy", "preempting"}:      true,
		{"suspended", "busy"}:       true,
		{"suspended", "claimed"}:    true,
		{"suspended", "vacating"}:   true,
		{"suspended", "preempting"}: true,
		{"vacating", "preempting"}:  true,
		{"vacating", "unclaimed"}:   true,
		{"vacating", "owner"}:       true,
		{"preempting", "unclaimed"}: true,
		{"preempting", "owner"}:     true,
	}
	for fromName, from := range phases {
		for toName, to := range phases {
			sl := newSlot(1, "host", time.Unix(100, 0))
			sl.phase = from
			err := sl.moveTo(to, time.Unix(200, 0))
			if legal[[2]string{fromName, toName}] {
				if err != nil {
					t.Errorf("%s → %s: %v", fromName, toName, err)
				}
				if sl.phase != to {
					t.Errorf("%s → %s: slot is %s", fromName, toName, sl.phase.status())
				}
				continue
			}
			if err == nil {
				t.Errorf("%s → %s allowed", fromName, toName)
				continue
			}
			if !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("%s → %s: error %v is not ErrIllegalTransition", fromName, toName, err)
			}
			var te *TransitionError
			if !errors.As(err, &te) || te.From != from.status() || te.To != to.status() {
				t.Errorf("%s → %s: error %#v does not carry both states", fromName, toName, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, from.status().String()) || !strings.Contains(msg, to.status().String()) || !strings.Contains(msg, "slot1@host") {
				t.Errorf("%s → %s: error %q does not name slot and both states", fromName, toName, msg)
			}
			if sl.phase != from {
				t.Errorf("%s → %s: refused move changed the slot to %s", fromName, toName, sl.phase.status())
			}
		}
	}
}

func TestSlotEnteredTimes(t *testing.T) {
	c := &claim{id: "c1"}
	sl := newSlot(2, "host", time.Unix(100, 0))
	if sl.name != "slot2@host" || sl.short() != "slot2" {
		t.Fatalf("names %q %q", sl.name, sl.short())
	}
	step := func(p phase, at int64, wantState, wantActivity int64) {
		t.Helper()
		if err := sl.moveTo(p, time.Unix(at, 0)); err != nil {
			t.Fatal(err)
		}
		if got := sl.enteredState.Unix(); got != wantState {
			t.Errorf("%s: EnteredCurrentState %d, want %d", p.status(), got, wantState)
		}
		if got := sl.enteredActivity.Unix(); got != wantActivity {
			t.Errorf("%s: EnteredCurrentActivity %d, want %d", p.status(), got, wantActivity)
		}
	}
	step(matched{claimID: "c1"}, 110, 110, 110)
	step(claimedIdle{claim: c}, 120, 120, 120)
	step(claimedBusy{claim: c, run: &run{}}, 130, 120, 130) // same state, new activity
	step(claimedIdle{claim: c}, 140, 120, 140)
	step(unclaimed{}, 150, 150, 150)
	if v := sl.view(nil); v.claim != nil || v.status != (Status{Unclaimed, Idle}) {
		t.Errorf("view of unclaimed slot: %+v", v)
	}
}

package reservation

import (
	"fmt"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

func ad(t *testing.T, src string) *classad.ClassAd {
	t.Helper()
	a, err := classad.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// What the negotiator sees: a reservation's jobs match only its machines
// and only in its window, and only for its owner; before a window an
// ordinary job matches a reserved machine unless it declares a run time
// that reaches into the window.
func TestConfineAndNarrow(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := NewSchedule([]Reservation{
		{ID: "rsv1", Owner: "ann", Start: now.Add(-time.Minute), End: now.Add(time.Hour), Nodes: []string{"slot1@a"}},
		{ID: "rsv2", Owner: "ann", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Nodes: []string{"slot1@b"}},
	}, now)
	machine := func(name string) *classad.ClassAd {
		return ad(t, fmt.Sprintf(`[ Name = %q; State = "Unclaimed"; Requirements = TARGET.RequestCpus <= 1 ]`, name))
	}
	a, b, c := s.NarrowMachine(machine("slot1@a")), s.NarrowMachine(machine("slot1@b")), s.NarrowMachine(machine("slot1@c"))
	for _, tc := range []struct {
		job           string
		negotiates    bool
		onA, onB, onC bool
		description   string
	}{
		{`[ Owner = "ann"; RequestCpus = 1; ReservationId = "rsv1" ]`, true, true, false, false, "rsv1's job, in its window"},
		{`[ Requirements = true; Owner = "bob"; RequestCpus = 1; ReservationId = "rsv1" ]`, false, false, false, false, "rsv1 named by another user"},
		{`[ Owner = "ann"; RequestCpus = 1; ReservationId = "rsv2" ]`, false, false, false, false, "rsv2's job before its window"},
		{`[ Owner = "ann"; RequestCpus = 1; ReservationId = "nope" ]`, false, false, false, false, "an unknown reservation"},
		{`[ Requirements = true; Owner = "bob"; RequestCpus = 1 ]`, true, false, true, true, "an ordinary job"},
		{`[ Requirements = true; Owner = "bob"; RequestCpus = 1; EstimatedRunTime = 1800 ]`, true, false, true, true, "an ordinary job that ends before rsv2"},
		{`[ Requirements = true; Owner = "bob"; RequestCpus = 1; EstimatedRunTime = 7200 ]`, true, false, false, true, "an ordinary job that would run into rsv2"},
	} {
		job, ok := s.Confine(ad(t, tc.job))
		if ok != tc.negotiates {
			t.Errorf("%s: negotiates %v, want %v", tc.description, ok, tc.negotiates)
			continue
		}
		if !ok {
			continue
		}
		for _, m := range []struct {
			ad   *classad.ClassAd
			want bool
		}{{a, tc.onA}, {b, tc.onB}, {c, tc.onC}} {
			name, _ := m.ad.EvalString("Name")
			if got := classad.Match(job, m.ad); got != m.want {
				t.Errorf("%s on %s: match %v, want %v", tc.description, name, got, m.want)
			}
		}
	}
	if c != s.NarrowMachine(c) || s.NarrowMachine(machine("slot1@c")).String() != machine("slot1@c").String() {
		t.Error("an unreserved machine's ad was changed")
	}
}

// What is vacated: at a window's start the other jobs and claims on its
// machines, at its end its own jobs; nothing else.
func TestEvictions(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := NewSchedule([]Reservation{
		{ID: "rsv1", Owner: "ann", Start: now.Add(-time.Minute), End: now.Add(time.Hour), Nodes: []string{"slot1@a", "slot2@a"}},
		{ID: "rsv2", Owner: "ann", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Nodes: []string{"slot1@b"}},
	}, now)
	machines := []*classad.ClassAd{
		ad(t, `[ Name = "slot1@a"; State = "Claimed"; RemoteOwner = "bob"; JobId = "1.0" ]`),                         // ordinary job at the start: out
		ad(t, `[ Name = "slot2@a"; State = "Claimed"; RemoteOwner = "ann"; JobId = "2.0"; ReservationId = "rsv1" ]`), // in its window: stays
		ad(t, `[ Name = "slot1@b"; State = "Claimed"; RemoteOwner = "bob"; JobId = "3.0" ]`),                         // before the window: stays
		ad(t, `[ Name = "slot1@c"; State = "Claimed"; RemoteOwner = "ann"; JobId = "4.0"; ReservationId = "rsv9" ]`), // a window that ended: out
		ad(t, `[ Name = "slot1@d"; State = "Unclaimed" ]`),
	}
	got := s.Evictions(machines)
	if len(got) != 2 || got[0].Slot != "slot1@a" || got[0].JobID != "1.0" || got[1].Slot != "slot1@c" || got[1].JobID != "4.0" {
		t.Fatalf("evictions %+v", got)
	}
	if next := s.NextChange(); !next.Equal(now.Add(time.Hour)) {
		t.Errorf("next change %v", next)
	}
}

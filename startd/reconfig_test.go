package startd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A START that turns false keeps new jobs off the machine but leaves the
// running one alone; a policy that does not parse is refused whole.
func TestReconfigureKeepsTheRunningJob(t *testing.T) {
	h := newHarness(t, nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.activate(t, slot, "c1")
	h.waitFile(t, "cwd")

	h.s.mu.Lock()
	cfg := h.s.cfg
	h.s.mu.Unlock()
	bad := cfg
	bad.Start = "KeyboardIdle >"
	if _, err := h.s.Reconfigure(bad); err == nil || !strings.Contains(err.Error(), "START") {
		t.Errorf("a START that does not parse: %v", err)
	}
	cfg.Start = "false"
	cfg.NumSlots = 4 // needs a restart: named, not applied
	if restart, err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	} else if !slices.Equal(restart, []string{"NUM_SLOTS"}) {
		t.Errorf("Reconfigure names %v for a restart, want NUM_SLOTS", restart)
	}
	for range 3 {
		h.s.evaluate()
	}
	if st := h.s.slotState(slot); st != (Status{Claimed, Busy}) {
		t.Errorf("after START = false the running job's slot is %v", st)
	}
	h.collector.waitFor(t, "the ad to show the new START", func() bool {
		return strings.Contains(h.collector.latest[slot], "Start = false")
	})
	if n := len(h.s.slots); n != 1 {
		t.Errorf("%d slots after a reconfiguration asking for 4", n)
	}
}

// A graceful drain leaves the running job alone for its retirement time
// and keeps START false through a reconfiguration and a restart, the ads
// saying why and that the job retires; a quick one vacates the job;
// cancelled, START is the configuration's again, after a restart too.
func TestDrain(t *testing.T) {
	h := newHarness(t, nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.activate(t, slot, "c1")
	h.waitFile(t, "cwd")
	h.s.mu.Lock()
	cfg := h.s.cfg
	h.s.mu.Unlock()
	cfg.MaxJobRetirementTime = "3600"
	if _, err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}

	if r, err := h.s.Drain(DrainRequest{Schedule: Graceful, Reason: "new disks"}); err != nil || len(r.Vacated) != 0 || len(r.Retiring) != 1 {
		t.Errorf("a graceful drain: %+v, %v; want one retiring job", r, err)
	}
	if !restartedDraining(t, cfg) {
		t.Error("a startd restarted on the execute directory of a drained one does not drain")
	}
	if _, err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	h.s.evaluate()
	if st := h.s.slotState(slot); st != (Status{Claimed, Busy}) {
		t.Errorf("draining gracefully within the retirement time, the running job's slot is %v", st)
	}
	h.collector.waitFor(t, "the ad to show the drain", func() bool {
		ad := h.collector.latest[slot]
		return strings.Contains(ad, "Draining = true") && strings.Contains(ad, "Start = false") &&
			strings.Contains(ad, `DrainReason = "new disks"`) && strings.Contains(ad, `Activity = "Retiring"`)
	})
	if r, err := h.s.Drain(DrainRequest{Schedule: Quick}); err != nil || len(r.Vacated) != 1 || r.Vacated[0] != slot {
		t.Errorf("a quick drain vacated %v, want %s: %v", r.Vacated, slot, err)
	}
	if st := h.s.slotState(slot); st != (Status{Preempting, Vacating}) {
		t.Errorf("after a quick drain the slot is %v", st)
	}
	if err := h.s.CancelDrain(); err != nil {
		t.Fatal(err)
	}
	h.collector.waitFor(t, "the ad to show the configured START", func() bool {
		ad := h.collector.latest[slot]
		return strings.Contains(ad, "Draining = false") && strings.Contains(ad, "Start = KeyboardIdle > 60")
	})
	if restartedDraining(t, cfg) {
		t.Error("a startd restarted after a cancelled drain drains")
	}
}

// restartedDraining reports whether a startd of cfg, made anew on a copy
// of its execute directory's drain state, drains.
func restartedDraining(t *testing.T, cfg Config) bool {
	t.Helper()
	dir := t.TempDir()
	if b, err := os.ReadFile(filepath.Join(cfg.ExecuteDir, drainFile)); err == nil {
		if err := os.WriteFile(filepath.Join(dir, drainFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ExecuteDir = dir
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adc.draining && s.adc.policy.start == drainStart && s.configuredStart.String() == "KeyboardIdle > 60"
}

// StopPeacefully lets the running job finish and starts no new one; Serve
// returns once the job has ended, leaving no drain recorded.
func TestStopPeacefully(t *testing.T) {
	h := newHarness(t, nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.activate(t, slot, "c1")
	h.waitFile(t, "cwd")

	h.s.StopPeacefully()
	h.collector.waitFor(t, "the ad to show the machine out of service", func() bool {
		ad := h.collector.latest[slot]
		return strings.Contains(ad, "Draining = true") && strings.Contains(ad, "Start = false")
	})
	// The job cannot end before it is told to go.
	select {
	case err := <-h.served:
		t.Fatalf("Serve returned while the job ran: %v", err)
	default:
	}
	if st := h.s.slotState(slot); st != (Status{Claimed, Busy}) {
		t.Errorf("stopping peacefully, the running job's slot is %v", st)
	}
	if err := os.WriteFile(filepath.Join(h.outDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-h.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	h.cancel()
	h.cancel = nil
	if _, err := os.Stat(filepath.Join(h.execDir, drainFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a peaceful stop left a drain recorded: %v", err)
	}
}

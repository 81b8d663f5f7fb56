package startd

import (
	"strings"
	"testing"

	"harrier.dev/harrier/wire"
)

// A START that turns false keeps new jobs off the machine but leaves the
// running one alone; a policy that does not parse is refused whole.
func TestReconfigureKeepsTheRunningJob(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	h.waitFile(t, "cwd")

	h.s.mu.Lock()
	cfg := h.s.cfg
	h.s.mu.Unlock()
	bad := cfg
	bad.Start = "KeyboardIdle >"
	if err := h.s.Reconfigure(bad); err == nil || !strings.Contains(err.Error(), "START") {
		t.Errorf("a START that does not parse: %v", err)
	}
	cfg.Start = "false"
	cfg.NumSlots = 4 // needs a restart: logged, not applied
	if err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
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

// A graceful drain leaves the running job alone and keeps START false
// through a reconfiguration; a quick one vacates the job; cancelled, START
// is the configuration's again.
func TestDrain(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	h.waitFile(t, "cwd")

	if v := h.s.Drain(false); len(v) != 0 {
		t.Errorf("a graceful drain vacated %v", v)
	}
	h.s.mu.Lock()
	cfg := h.s.cfg
	h.s.mu.Unlock()
	if err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	h.s.evaluate()
	if st := h.s.slotState(slot); st != (Status{Claimed, Busy}) {
		t.Errorf("draining gracefully, the running job's slot is %v", st)
	}
	h.collector.waitFor(t, "the ad to show the drain", func() bool {
		ad := h.collector.latest[slot]
		return strings.Contains(ad, "Draining = true") && strings.Contains(ad, "Start = false")
	})
	if v := h.s.Drain(true); len(v) != 1 || v[0] != slot {
		t.Errorf("a quick drain vacated %v, want %s", v, slot)
	}
	if st := h.s.slotState(slot); st != (Status{Preempting, Vacating}) {
		t.Errorf("after a quick drain the slot is %v", st)
	}
	h.s.CancelDrain()
	h.collector.waitFor(t, "the ad to show the configured START", func() bool {
		ad := h.collector.latest[slot]
		return strings.Contains(ad, "Draining = false") && strings.Contains(ad, "Start = KeyboardIdle > 60")
	})
}

package startd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// bobJob is a job the harness's RANK (TARGET.Owner == "alice") ranks 0.
const bobJob = `[ MyType = "Job"; ClusterId = 8; ProcId = 0; Owner = "bob"; Requirements = true ]`

// preemptingAd marks jobAd (alice's) as the negotiator marks a preempting
// match.
const preemptingAd = `[ MyType = "Job"; ClusterId = 7; ProcId = 0; Owner = "alice"; Requirements = true; PreemptReason = "rank"; PreemptsJob = "8.0" ]`

// lingeringStarter makes the harness's starters ignore SIGTERM, so that a
// vacating job stays until the test lets it go.
func lingeringStarter(s *Startd) {
	s.cfg.StarterCommand[2] = "trap '' TERM\n" + s.cfg.StarterCommand[2]
}

// runBob matches, claims and activates bob's job under claim id c on slot.
func (h *harness) runBob(t *testing.T, slot, c string) {
	t.Helper()
	ctx := t.Context()
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: c, JobAd: bobJob}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: c, JobAd: bobJob, Agent: "agent@bob"}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: c, JobAd: bobJob, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	h.waitFile(t, "cwd")
}

func TestPreemptingMatchTakesTheSlot(t *testing.T) {
	h := newHarness(t, lingeringStarter)
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.runBob(t, slot, "c1")
	ad := h.collector.waitStatus(t, slot, Status{Claimed, Busy})
	if r, ok := ad.EvalReal("CurrentRank"); !ok || r != 0 {
		t.Errorf("CurrentRank while bob's job runs = %v (%v), want 0", r, ok)
	}

	// A match for a Claimed slot that is not marked preempting is refused.
	_, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c2", JobAd: jobAd})
	wantCode(t, err, codes.FailedPrecondition)

	// A preempting match vacates bob's job and holds the slot for its claim.
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c2", JobAd: preemptingAd}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Preempting, Vacating})
	reply, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c2", JobAd: jobAd, Agent: "agent@alice"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Accepted || !reply.Pending {
		t.Errorf("claim while the slot vacates for it: %+v, want pending", reply)
	}
	// No one else gets it meanwhile.
	reply, err = h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c3", JobAd: jobAd, Agent: "agent@other"})
	if err != nil || reply.Accepted || reply.Pending {
		t.Errorf("claim under another id while vacating: %+v, %v; want refused", reply, err)
	}
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c3", JobAd: preemptingAd})
	wantCode(t, err, codes.FailedPrecondition)

	// Bob's job leaves: the slot is the pending claim's, not bob's any more.
	if err := os.WriteFile(filepath.Join(h.outDir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Matched, Idle})
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: bobJob, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.NotFound)
	reply, err = h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c2", JobAd: jobAd, Agent: "agent@alice"})
	if err != nil || !reply.Accepted {
		t.Fatalf("claim after the vacate: %+v, %v", reply, err)
	}
	ad = h.collector.waitStatus(t, slot, Status{Claimed, Idle})
	if got := adString(t, ad, "RemoteOwner"); got != "alice" {
		t.Errorf("RemoteOwner = %q, want alice", got)
	}
	if r, ok := ad.EvalReal("CurrentRank"); !ok || r != 1 {
		t.Errorf("CurrentRank of alice's claim = %v (%v), want 1", r, ok)
	}

	// A rank preemption that the machine's RANK does not bear out (the
	// negotiator read an old ad) is refused.
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c5",
		JobAd: `[ MyType = "Job"; ClusterId = 9; ProcId = 0; Owner = "bob"; Requirements = true; PreemptReason = "rank"; PreemptsJob = "7.0" ]`})
	wantCode(t, err, codes.FailedPrecondition)
	// So is one that names a job other than the claim's: the slot changed
	// hands since the negotiator read its ad.
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c5", JobAd: preemptingAd})
	wantCode(t, err, codes.FailedPrecondition)

	// A preempting match takes an idle claim's slot at once (here by
	// priority, for a job RANK likes as much as the claim's).
	byPriority := `[ MyType = "Job"; ClusterId = 10; ProcId = 0; Owner = "alice"; Requirements = true; PreemptReason = "priority"; PreemptsJob = "7.0" ]`
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c4", JobAd: byPriority}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Matched, Idle})
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c2", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.NotFound)
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c4", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim of the preempted idle slot: %+v, %v", r, err)
	}
}

// TestPendingClaimExpires: an agent that never claims what a slot was
// vacated for does not keep the slot: the match expires as any other.
func TestPendingClaimExpires(t *testing.T) {
	h := newHarness(t, func(s *Startd) {
		lingeringStarter(s)
		s.matchTimeout = 200 * time.Millisecond
	})
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.runBob(t, slot, "c1")
	if _, err := h.client.Matched(t.Context(), &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c2", JobAd: preemptingAd}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Preempting, Vacating})
	if err := os.WriteFile(filepath.Join(h.outDir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.collector.waitFor(t, "the pending claim to expire", func() bool {
		a, err := classad.Parse(h.collector.latest[slot])
		if err != nil {
			return false
		}
		st, _ := a.EvalString("State")
		return st == "Unclaimed" && h.s.slotState("slot1") == Status{Unclaimed, Idle}
	})
}

// TestPreemptionKillsWithoutWantVacate: with WANT_VACATE false the
// preempted job is killed rather than asked to leave, and the slot still
// goes to the pending claim.
func TestPreemptionKillsWithoutWantVacate(t *testing.T) {
	h := newHarness(t, func(s *Startd) {
		lingeringStarter(s)
		s.killGrace = 100 * time.Millisecond
		p, err := parsePolicy(Config{Start: "KeyboardIdle > 60", Rank: `TARGET.Owner == "alice"`, WantVacate: "false"})
		if err != nil {
			t.Fatal(err)
		}
		s.adc.policy = p
	})
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.runBob(t, slot, "c1")
	if _, err := h.client.Matched(t.Context(), &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c2", JobAd: preemptingAd}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Matched, Idle})
	if r, err := h.client.RequestClaim(t.Context(), &wire.RequestClaimRequest{Slot: slot, ClaimId: "c2", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim after the kill: %+v, %v", r, err)
	}
}

package startd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"harrier.dev/harrier/wire"
)

// signalScript is a starter that records the signals the startd sends it
// in the file "signals" in the directory named by its first argument.
// $2 is what it does on SIGTERM: "exit 0" (vacate) or ":" (ignore it).
const signalScript = `trap 'echo usr1 >> "$1/signals"' USR1
trap 'echo usr2 >> "$1/signals"' USR2
trap 'echo term >> "$1/signals"; eval "$2"' TERM
head -n 1 > /dev/null; touch "$1/started"
while :; do sleep 0.05; done`

// policyHarness is a harness whose startd evaluates policy every 50 ms
// with a starter that records signals.
func policyHarness(t *testing.T, cfg Config, onTerm string, tweak func(*Startd)) *harness {
	t.Helper()
	return newHarness(t, func(s *Startd) {
		p, err := parsePolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.adc.policy = p
		s.cfg.PollingInterval = 50 * time.Millisecond
		s.killGrace = 200 * time.Millisecond
		out := s.cfg.StarterCommand[len(s.cfg.StarterCommand)-1] // the harness's output directory
		s.cfg.StarterCommand = []string{"/bin/sh", "-c", signalScript, "starter", out, onTerm}
		if tweak != nil {
			tweak(s)
		}
	})
}

// runJob matches, claims and activates slot1 under claim id.
func (h *harness) runJob(t *testing.T, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: id, JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: "slot1", ClaimId: id, JobAd: jobAd, Agent: "agent@submit"}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: id, JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	h.waitFile(t, "started")
}

// waitSignals waits until the starter has recorded want.
func (h *harness) waitSignals(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(h.outDir, "signals"))
		if strings.Join(strings.Fields(string(b)), " ") == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("starter got signals %q, want %q", b, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPolicySuspendContinueVacate(t *testing.T) {
	h := policyHarness(t, Config{
		Start:       "KeyboardIdle > 60",
		WantSuspend: "true",
		Suspend:     "KeyboardIdle < 60",
		Continue:    "KeyboardIdle > 120",
		Preempt:     `Activity == "Suspended" && KeyboardIdle < 10`,
	}, "exit 0", nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.runJob(t, "c1")
	h.collector.waitStatus(t, slot, Status{Claimed, Busy})

	h.idle.Store(30) // the owner typed
	h.collector.waitStatus(t, slot, Status{Claimed, Suspended})
	h.waitSignals(t, "usr1")
	h.idle.Store(3600) // and left
	h.collector.waitStatus(t, slot, Status{Claimed, Busy})
	h.waitSignals(t, "usr1 usr2")

	h.idle.Store(5) // suspended, then preempted: the starter vacates
	h.waitSignals(t, "usr1 usr2 usr1 term")
	// The owner has the machine now: START is false whatever the job.
	h.collector.waitStatus(t, slot, Status{Owner, Idle})
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left after the vacate: %v", d)
	}
	h.idle.Store(3600)
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
}

func TestPolicyKillsAJobThatDoesNotVacate(t *testing.T) {
	h := policyHarness(t, Config{Start: "KeyboardIdle > 60", Preempt: "KeyboardIdle < 60", MaxVacateTime: "0.2"}, ":", nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.runJob(t, "c1")
	h.idle.Store(5)
	h.waitSignals(t, "term")
	// SIGINT after MaxVacateTime ends the starter.
	h.collector.waitStatus(t, slot, Status{Owner, Idle})
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left after the kill: %v", d)
	}
}

func TestClaimLease(t *testing.T) {
	h := policyHarness(t, Config{Start: "KeyboardIdle > 60"}, "exit 0", func(s *Startd) { s.cfg.ClaimLease = time.Second })
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	_, err := h.client.KeepAlive(ctx, &wire.KeepAliveRequest{ClaimId: "c1"})
	wantCode(t, err, codes.NotFound)
	h.runJob(t, "c1")
	// Keepalives hold the claim well past its lease.
	for range 12 {
		r, err := h.client.KeepAlive(ctx, &wire.KeepAliveRequest{ClaimId: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if r.LeaseSeconds != 1 {
			t.Errorf("lease %d s, want 1", r.LeaseSeconds)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st := h.s.slotState("slot1"); st != (Status{Claimed, Busy}) {
		t.Fatalf("slot is %s with keepalives, want Claimed/Busy", st)
	}
	// The agent falls silent: the job is vacated and the slot freed.
	h.waitSignals(t, "term")
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	_, err = h.client.KeepAlive(ctx, &wire.KeepAliveRequest{ClaimId: "c1"})
	wantCode(t, err, codes.NotFound)
}

func TestActivateChecksStart(t *testing.T) {
	h := policyHarness(t, Config{Start: `KeyboardIdle > 60 && TARGET.Owner != "mallory"`}, "exit 0", nil)
	ctx := t.Context()
	h.collector.waitStatus(t, "slot1@exec1", Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	// The agent reuses its claim for another user's job, one the owner
	// does not welcome.
	mallory := strings.Replace(jobAd, `"alice"`, `"mallory"`, 1)
	_, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: mallory, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.FailedPrecondition)
	if st := h.s.slotState("slot1"); st != (Status{Claimed, Idle}) {
		t.Errorf("slot is %s after a refused activation", st)
	}
}

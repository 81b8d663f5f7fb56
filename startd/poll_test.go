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

// commandScript is a starter that records the commands the startd sends it
// after its job in the file "commands" in the directory named by its first
// argument. $2 is what it does on vacate: "exit 0" or ":" (ignore it).
const commandScript = `read -r job; touch "$1/started"
while read -r c; do
	case $c in
	*'"suspend":true'*) echo suspend >> "$1/commands" ;;
	*'"continue":true'*) echo continue >> "$1/commands" ;;
	*'"vacate":true'*) echo vacate >> "$1/commands"; eval "$2" ;;
	*'"kill":true'*) echo kill >> "$1/commands" ;;
	esac
done
while :; do sleep 0.05; done`

// policyHarness is a harness whose startd evaluates policy every 50 ms
// with a starter that records the commands it gets.
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
		s.cfg.StarterCommand = []string{"/bin/sh", "-c", commandScript, "starter", out, onTerm}
		if tweak != nil {
			tweak(s)
		}
	})
}

// runJob runs jobAd on slot1 under claim id, until its starter started.
func (h *harness) runJob(t *testing.T, id string) {
	t.Helper()
	h.activate(t, "slot1", id)
	h.waitFile(t, "started")
}

// waitCommands waits until the starter has recorded want.
func (h *harness) waitCommands(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(h.outDir, "commands"))
		if strings.Join(strings.Fields(string(b)), " ") == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("starter got commands %q, want %q", b, want)
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
	h.waitCommands(t, "suspend")
	h.idle.Store(3600) // and left
	h.collector.waitStatus(t, slot, Status{Claimed, Busy})
	h.waitCommands(t, "suspend continue")

	h.idle.Store(5) // suspended, then preempted: the starter vacates
	h.waitCommands(t, "suspend continue suspend vacate")
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
	// A kill after MaxVacateTime, and SIGKILL after the grace, end the
	// starter that ignores both.
	h.waitCommands(t, "vacate kill")
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
	h.waitCommands(t, "vacate")
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

package startd

import (
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// A drain by migration of a job that cannot be checkpointed here (the
// harness has no checkpoint key) lets it retire; with HTCondor's default
// MAXJOBRETIREMENTTIME of 0 the next evaluation vacates it. A restarted
// startd drains on with the same reason.
func TestDrainRetirementOver(t *testing.T) {
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

	r, err := h.s.Drain(DrainRequest{Reason: "defrag"})
	if err != nil || len(r.Vacated) != 0 || len(r.Retiring) != 1 || r.Retiring[0] != slot {
		t.Fatalf("a drain of an uncheckpointable job: %+v, %v; want %s retiring", r, err, slot)
	}
	h.s.evaluate()
	if st := h.s.slotState(slot); st != (Status{Preempting, Vacating}) {
		t.Errorf("with no retirement time, after an evaluation the slot is %v, want vacating", st)
	}
	h.s.mu.Lock()
	cfg := h.s.cfg
	h.s.mu.Unlock()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !s.adc.draining || !s.adc.drained || s.adc.drainReason != "defrag" {
		t.Errorf("restarted: draining %v, retiring %v, reason %q", s.adc.draining, s.adc.drained, s.adc.drainReason)
	}
}

func TestUncheckpointable(t *testing.T) {
	s := &Startd{cfg: Config{CheckpointKeyFile: "/pool/ckpt.key"}, adc: adConfig{sandbox: "container"}}
	for _, c := range []struct {
		job, why string
	}{
		{`[ Owner = "alice" ]`, ""},
		{`[ WantCheckpoint = true ]`, ""},
		{`[ WantCheckpoint = false ]`, "want_checkpoint"},
		{`[ ContainerImage = "docker.io/library/alpine" ]`, "container image"},
		{`[ DockerImage = "alpine" ]`, "container image"},
		{`[ RequestGpus = 1 ]`, "GPUs"},
		{`[ RequestGpus = 0 ]`, ""},
	} {
		ad, err := classad.Parse(c.job)
		if err != nil {
			t.Fatal(err)
		}
		if why := s.uncheckpointable(ad); (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, want %q", c.job, why, c.why)
		}
	}
	ad := classad.New()
	if why := (&Startd{adc: adConfig{sandbox: "container"}}).uncheckpointable(ad); !strings.Contains(why, "checkpoint key") {
		t.Errorf("without a key: %q", why)
	}
	if why := (&Startd{cfg: Config{CheckpointKeyFile: "k"}, adc: adConfig{sandbox: "process"}}).uncheckpointable(ad); !strings.Contains(why, "containers") {
		t.Errorf("in processes: %q", why)
	}
}

// The retirement time is the machine's, or the job's if shorter, as in
// HTCondor; anything but a non-negative number is none.
func TestRetirement(t *testing.T) {
	machine, err := classad.Parse(`[ Cpus = 4 ]`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		machine, job string
		want         time.Duration
	}{
		{"", `[ ]`, 0},
		{"3600", `[ ]`, time.Hour},
		{"3600", `[ MaxJobRetirementTime = 60 ]`, time.Minute},
		{"60", `[ MaxJobRetirementTime = 3600 ]`, time.Minute},
		{"MY.Cpus * 60", `[ ]`, 4 * time.Minute},
		{"TARGET.Lease", `[ Lease = 120 ]`, 2 * time.Minute},
		{"-5", `[ ]`, 0},
		{`"soon"`, `[ ]`, 0},
	} {
		p, err := parsePolicy(Config{MaxJobRetirementTime: c.machine})
		if err != nil {
			t.Fatal(err)
		}
		job, err := classad.Parse(c.job)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.retirement(machine, job); got != c.want {
			t.Errorf("MAXJOBRETIREMENTTIME %q, job %s: %v, want %v", c.machine, c.job, got, c.want)
		}
	}
}

func TestDrainingStatus(t *testing.T) {
	for _, c := range []struct {
		draining bool
		in       Status
		want     Status
	}{
		{false, Status{Claimed, Busy}, Status{Claimed, Busy}},
		{true, Status{Claimed, Busy}, Status{Claimed, "Retiring"}},
		{true, Status{Owner, Idle}, Status{"Drained", Idle}},
		{false, Status{Owner, Idle}, Status{Owner, Idle}},
		{true, Status{Preempting, Vacating}, Status{Preempting, Vacating}},
	} {
		st, act := drainingStatus(c.draining, c.in)
		if (Status{st, act}) != c.want {
			t.Errorf("draining %v, %v: %v/%v, want %v", c.draining, c.in, st, act, c.want)
		}
	}
}

package startd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// A drain by migration of a job that cannot be checkpointed here (the
// harness has no checkpoint key) lets it retire; with HTCondor's default
// MAXJOBRETIREMENTTIME of 0 the next evaluation vacates it. A restarted
// startd drains on with the same reason.
func TestDrainRetirementOver(t *testing.T) {
	h := newHarness(t, nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.activate(t, slot, "c1")
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

// -check refuses a drain when it is not true on every slot, changing
// nothing; -start is START while draining, through a restart and a
// reconfiguration; -resume-on-completion puts an empty machine back in
// service at the next evaluation.
func TestDrainStartCheckResume(t *testing.T) {
	h := newHarness(t, nil)
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.s.Drain(DrainRequest{Check: `State == "Claimed"`}); !errors.Is(err, ErrDrainRefused) {
		t.Errorf("a drain whose check is false: %v, want ErrDrainRefused", err)
	}
	if _, err := h.s.Drain(DrainRequest{Start: "1 +"}); !errors.Is(err, ErrDrainRefused) {
		t.Errorf("a drain whose START does not parse: %v, want ErrDrainRefused", err)
	}
	h.s.mu.Lock()
	draining := h.s.adc.draining
	cfg := h.s.cfg
	h.s.mu.Unlock()
	if draining {
		t.Fatal("a refused drain drains")
	}
	if _, err := os.Stat(filepath.Join(cfg.ExecuteDir, drainFile)); err == nil {
		t.Error("a refused drain was recorded")
	}

	const start = `TARGET.Owner == "alice"`
	if _, err := h.s.Drain(DrainRequest{Check: `State == "Unclaimed"`, Start: start}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	h.s.mu.Lock()
	got := h.s.adc.policy.start.String()
	h.s.mu.Unlock()
	if got != start {
		t.Errorf("START while draining, after a reconfiguration: %s, want %s", got, start)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.adc.policy.start.String(); got != start || s.configuredStart.String() != "KeyboardIdle > 60" {
		t.Errorf("restarted: START %s (configured %s), want %s", got, s.configuredStart, start)
	}

	if _, err := h.s.Drain(DrainRequest{ResumeOnCompletion: true}); err != nil {
		t.Fatal(err)
	}
	h.s.evaluate()
	h.s.mu.Lock()
	draining, got = h.s.adc.draining, h.s.adc.policy.start.String()
	h.s.mu.Unlock()
	if draining || got != "KeyboardIdle > 60" {
		t.Errorf("an empty machine drained to resume on completion: draining %v, START %s", draining, got)
	}
	if _, err := os.Stat(filepath.Join(cfg.ExecuteDir, drainFile)); err == nil {
		t.Error("the resumed drain is still recorded")
	}
}

package startd

import (
	"math"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

var testMachine = machine{cpus: 8, memoryMiB: 16000, diskKiB: 1 << 30, loadAvg: 0.25, keyboardIdle: 90 * time.Second, consoleIdle: 90 * time.Second, arch: "X86_64", opSysAndVer: "Debian12"}

// testPolicy parses a START expression, with the defaults for the rest.
func testPolicy(tb testing.TB, start string) policy {
	tb.Helper()
	p, err := parsePolicy(Config{Start: start})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestMachineAdSharesTheMachine(t *testing.T) {
	c := adConfig{host: "exec1", addr: "10.0.0.2:9000", policy: testPolicy(t, "KeyboardIdle > 60"), numSlots: 2, version: "v1"}
	v := view{id: 2, slotID: 2, name: "slot2@exec1", status: Status{Claimed, Busy},
		enteredState: time.Unix(1000, 0), enteredActivity: time.Unix(1100, 0),
		claim: &claim{id: "c1", agent: "agent@submit", owner: "bob", jobID: "3.1"}}
	m := testMachine
	m.condorLoads = map[int]float64{1: 0.05, 2: 0.1}
	ad := machineAd(c, m, v, time.Unix(1200, 0))
	// Round-trip through text, as the collector sees it.
	ad, err := classad.Parse(ad.String())
	if err != nil {
		t.Fatal(err)
	}
	ints := map[string]int64{
		"Cpus": 4, "Memory": 8000, "Disk": 1 << 29, "TotalDisk": 1 << 30, "TotalCpus": 8, "TotalMemory": 16000, "TotalSlots": 2,
		"SlotID": 2, "KeyboardIdle": 90, "ConsoleIdle": 90, "MyCurrentTime": 1200,
		"EnteredCurrentState": 1000, "EnteredCurrentActivity": 1100,
	}
	for name, want := range ints {
		if got, ok := ad.EvalInt(name); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", name, got, ok, want)
		}
	}
	strs := map[string]string{
		"MyType": "Machine", "TargetType": "Job", "Name": "slot2@exec1", "Machine": "exec1",
		"StartdAddr": "10.0.0.2:9000", "State": "Claimed", "Activity": "Busy", "Arch": "X86_64",
		"OpSys": "LINUX", "OpSysAndVer": "Debian12", "HarrierVersion": "v1",
		"ClaimedBy": "agent@submit", "RemoteOwner": "bob", "JobId": "3.1",
	}
	for name, want := range strs {
		if got, ok := ad.EvalString(name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
	// Slot 2's job causes 0.1 of the load, slot 1's 0.05; the rest, 0.1,
	// is the owner's and is shared between the slots.
	for name, want := range map[string]float64{"TotalLoadAvg": 0.25, "TotalCondorLoadAvg": 0.15, "CondorLoadAvg": 0.1, "LoadAvg": 0.15} {
		if got, ok := ad.EvalReal(name); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"Requirements", "Start"} {
		if b, ok := ad.EvalBool(name); !ok || !b {
			t.Errorf("%s = %v (%v), want true with KeyboardIdle 90", name, b, ok)
		}
	}
}

// A machine that restores checkpoints says on which platform; one that
// cannot says nothing, and a checkpointed job does not come to it.
func TestMachineAdCheckpointPlatform(t *testing.T) {
	v := view{id: 1, name: "slot1@exec1", status: Status{Unclaimed, Idle}}
	c := adConfig{host: "exec1", policy: testPolicy(t, "true"), numSlots: 1}
	if _, ok := machineAd(c, testMachine, v, time.Unix(0, 0)).Lookup("CheckpointPlatform"); ok {
		t.Error("a machine that restores no checkpoint advertises a platform")
	}
	c.ckptPlatform = "LINUX X86_64 avx"
	ad := machineAd(c, testMachine, v, time.Unix(0, 0))
	for _, tc := range []struct {
		last string // the job's LastCheckpointPlatform; "" none
		want bool
	}{{"", true}, {"LINUX X86_64 avx", true}, {"LINUX X86_64 avx avx2", false}} {
		src := `[ Owner = "alice"; Requirements = (MY.LastCheckpointPlatform =?= undefined) || (TARGET.CheckpointPlatform =?= MY.LastCheckpointPlatform) ]`
		job, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if tc.last != "" {
			job.SetString("LastCheckpointPlatform", tc.last)
		}
		if got := classad.Match(job, ad); got != tc.want {
			t.Errorf("job checkpointed on %q: match %v, want %v", tc.last, got, tc.want)
		}
	}
}

func TestMachineAdMatchesJobs(t *testing.T) {
	c := adConfig{host: "exec1", policy: testPolicy(t, `TARGET.Owner == "alice"`), numSlots: 1}
	ad := machineAd(c, testMachine, view{id: 1, name: "slot1@exec1", status: Status{Unclaimed, Idle}}, time.Unix(0, 0))
	for _, tc := range []struct {
		job  string
		want bool
	}{
		{`[ Owner = "alice"; Requirements = TARGET.Memory >= 1000 ]`, true},
		{`[ Owner = "bob"; Requirements = true ]`, false},
		{`[ Owner = "alice"; Requirements = TARGET.Cpus > 8 ]`, false},
	} {
		job, err := classad.Parse(tc.job)
		if err != nil {
			t.Fatal(err)
		}
		if got := classad.Match(job, ad); got != tc.want {
			t.Errorf("Match(%s) = %v, want %v", tc.job, got, tc.want)
		}
	}
}

func BenchmarkMachineAd(b *testing.B) {
	c := adConfig{host: "exec1", addr: "10.0.0.2:9000", policy: testPolicy(b, "KeyboardIdle > 15 * 60 && LoadAvg < 0.3"), numSlots: 2, version: "v1"}
	v := view{id: 1, name: "slot1@exec1", status: Status{Unclaimed, Idle}}
	b.ReportAllocs()
	for b.Loop() {
		_ = machineAd(c, testMachine, v, time.Unix(1200, 0)).String()
	}
}

func BenchmarkMeasureHost(b *testing.B) {
	m := measureHost(b.TempDir(), newIdleMeter(defaultTerminals(), defaultConsoleDevices()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m(); err != nil {
			b.Fatal(err)
		}
	}
}

// STARTD_ATTRS join the ad without replacing what the startd sets, and a
// gang's claim publishes the licenses its job ad holds.
func TestMachineAdAttrsAndGangLicenses(t *testing.T) {
	p, err := parsePolicy(Config{Attrs: map[string]string{"Subnet": `"10.1"`, "Machine": `"spoof"`, "Fast": "Cpus > 4"}})
	if err != nil {
		t.Fatal(err)
	}
	job := classad.New()
	job.SetValue(attrGangLicenses, classad.List(classad.String("sim")))
	c := adConfig{host: "exec1", policy: p, numSlots: 1}
	v := view{id: 1, name: "slot1@exec1", status: Status{Claimed, Idle}, claim: &claim{id: "c1", jobID: "3.0", job: job}}
	ad := machineAd(c, testMachine, v, time.Unix(1200, 0))
	if s, _ := ad.EvalString("Subnet"); s != "10.1" {
		t.Errorf("Subnet = %q", s)
	}
	if s, _ := ad.EvalString("Machine"); s != "exec1" {
		t.Errorf("Machine = %q: STARTD_ATTRS replaced the startd's own", s)
	}
	if fast, _ := ad.EvalBool("Fast"); !fast {
		t.Errorf("Fast, an expression of the ad, = %v", ad.Eval("Fast"))
	}
	if l := ad.Eval(attrGangLicenses); l.String() != `{ "sim" }` {
		t.Errorf("GangLicenses = %s", l)
	}
	if _, err := parsePolicy(Config{Attrs: map[string]string{"Bad": "1 +"}}); err == nil || !strings.Contains(err.Error(), "STARTD_ATTRS: Bad") {
		t.Errorf("a bad STARTD_ATTRS expression: %v", err)
	}
}

// A claimed slot publishes what the matchmaker counts of its job: the
// concurrency limits it uses and the accounting group it is charged to.
func TestMachineAdChargesTheClaimsGroup(t *testing.T) {
	job, err := classad.Parse(`[ Owner = "alice"; ConcurrencyLimits = "sw"; AccountingGroup = "group_physics.alice" ]`)
	if err != nil {
		t.Fatal(err)
	}
	c := adConfig{host: "exec1", policy: testPolicy(t, "true"), numSlots: 1}
	v := view{id: 1, name: "slot1@exec1", status: Status{Claimed, Busy},
		claim: &claim{id: "c1", agent: "agent@submit", owner: "alice", jobID: "3.1", job: job}}
	ad := machineAd(c, testMachine, v, time.Unix(0, 0))
	for name, want := range map[string]string{"RemoteOwner": "alice", "ConcurrencyLimits": "sw", "AccountingGroup": "group_physics.alice"} {
		if got, _ := ad.EvalString(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	v.claim.job = classad.New()
	if _, ok := machineAd(c, testMachine, v, time.Unix(0, 0)).Lookup("AccountingGroup"); ok {
		t.Error("a slot whose job runs in no accounting group publishes one")
	}
}

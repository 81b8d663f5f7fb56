package startd

import (
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// desktop is the desktop policy in seconds, as the pool's template
// expands it.
var desktop = Config{
	Start:       `TARGET.Owner != "mallory" && KeyboardIdle > 900 && (LoadAvg - CondorLoadAvg) <= 0.3`,
	Rank:        `TARGET.Department == "Physics"`,
	WantSuspend: "true",
	Suspend:     "KeyboardIdle < 60 || (LoadAvg - CondorLoadAvg) >= 0.5",
	Continue:    "(LoadAvg - CondorLoadAvg) <= 0.3 && KeyboardIdle > 300",
	Preempt:     `Activity == "Suspended" && (MyCurrentTime - EnteredCurrentActivity) > 600`,
	Kill:        "false",
	WantVacate:  "true",
	IsOwner:     "(START =?= false)",
}

func mustPolicy(t *testing.T, cfg Config) policy {
	t.Helper()
	p, err := parsePolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustAd(t *testing.T, text string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// sit builds a situation: the slot's status, its measured keyboard idle
// time and load, how long it has been in its activity, and a job.
func sit(t *testing.T, p policy, st Status, idle int64, load float64, in time.Duration, job string) situation {
	t.Helper()
	now := time.Unix(100000, 0)
	v := view{id: 1, name: "slot1@desk", status: st, enteredState: now.Add(-in), enteredActivity: now.Add(-in)}
	m := machine{cpus: 4, memoryMiB: 8000, diskKiB: 1 << 20, loadAvg: load,
		keyboardIdle: time.Duration(idle) * time.Second, consoleIdle: time.Duration(idle) * time.Second}
	s := situation{status: st, machine: machineAd(adConfig{host: "desk", policy: p, numSlots: 1}, m, v, now), inActivity: in}
	if job != "" {
		s.job = mustAd(t, job)
	}
	return s
}

const (
	aliceJob   = `[ Owner = "alice"; Department = "Physics" ]`
	malloryJob = `[ Owner = "mallory" ]`
)

func TestDecideDesktop(t *testing.T) {
	p := mustPolicy(t, desktop)
	for _, c := range []struct {
		name string
		st   Status
		idle int64
		load float64
		in   time.Duration
		job  string
		want step
	}{
		{"owner types", Status{Owner, Idle}, 5, 0, time.Hour, "", stay},
		{"owner away, load low", Status{Owner, Idle}, 1000, 0.1, time.Hour, "", becomeUnclaimed},
		{"owner away, own load high", Status{Owner, Idle}, 1000, 0.9, time.Hour, "", stay},
		{"owner comes back to a free machine", Status{Unclaimed, Idle}, 3, 0, time.Minute, "", becomeOwner},
		{"free and idle", Status{Unclaimed, Idle}, 1000, 0, time.Minute, "", stay},
		{"owner back before the claim", Status{Matched, Idle}, 3, 0, time.Second, "", becomeOwner},
		{"claimed, owner back", Status{Claimed, Idle}, 3, 0, time.Second, aliceJob, releaseClaim},
		{"claimed for an unwelcome job", Status{Claimed, Idle}, 1000, 0, time.Second, malloryJob, releaseClaim},
		{"claimed, all well", Status{Claimed, Idle}, 1000, 0, time.Second, aliceJob, stay},
		{"busy, owner away", Status{Claimed, Busy}, 1000, 0, time.Minute, aliceJob, stay},
		{"busy, keystroke", Status{Claimed, Busy}, 0, 0, time.Minute, aliceJob, suspendJob},
		{"busy, owner's load", Status{Claimed, Busy}, 1000, 0.8, time.Minute, aliceJob, suspendJob},
		{"suspended, owner still there", Status{Claimed, Suspended}, 30, 0, time.Minute, aliceJob, stay},
		{"suspended, owner gone 5 minutes", Status{Claimed, Suspended}, 301, 0, time.Minute, aliceJob, continueJob},
		{"suspended, owner gone but loading", Status{Claimed, Suspended}, 301, 0.4, time.Minute, aliceJob, stay},
		{"suspended too long", Status{Claimed, Suspended}, 30, 0, 601 * time.Second, aliceJob, vacateJob},
		{"suspended too long although idle", Status{Claimed, Suspended}, 400, 0, 601 * time.Second, aliceJob, vacateJob},
		{"vacating", Status{Preempting, Vacating}, 30, 0, time.Minute, aliceJob, stay},
		{"vacating too long", Status{Preempting, Vacating}, 30, 0, 601 * time.Second, aliceJob, killJob},
		{"killing", Status{Preempting, Killing}, 30, 0, time.Hour, aliceJob, stay},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := p.decide(sit(t, p, c.st, c.idle, c.load, c.in, c.job))
			if got != c.want {
				t.Errorf("decide = %v (%s), want %v", got, why, c.want)
			}
			if got != stay && why == "" {
				t.Errorf("%v without a reason", got)
			}
		})
	}
}

func TestDecideLease(t *testing.T) {
	p := mustPolicy(t, Config{Continue: "false"})
	for st, want := range map[Status]step{
		{Claimed, Idle}:       releaseClaim,
		{Claimed, Busy}:       vacateJob,
		{Claimed, Suspended}:  vacateJob,
		{Preempting, Killing}: stay,
	} {
		s := sit(t, p, st, 0, 0, time.Second, aliceJob)
		if got, _ := p.decide(s); got != stay {
			t.Errorf("%s with a live lease: %v", st, got)
		}
		s.leaseExpired = true
		if got, why := p.decide(s); got != want || (want != stay && !strings.Contains(why, "lease")) {
			t.Errorf("%s with an expired lease: %v (%s), want %v", st, got, why, want)
		}
	}
}

// Expressions that are undefined or errors never start, suspend, preempt
// or kill anything.
func TestDecideUndefinedIsSafe(t *testing.T) {
	p := mustPolicy(t, Config{
		Start:       "TARGET.Tier < 3",
		WantSuspend: "NoSuchAttr",
		Suspend:     "NoSuchAttr > 1",
		Continue:    "TARGET.Nope",
		Preempt:     `"a" + 1`,
		Kill:        "NoSuchAttr",
		WantVacate:  "NoSuchAttr",
		IsOwner:     "NoSuchAttr",
	})
	for _, c := range []struct {
		st   Status
		want step
	}{
		{Status{Owner, Idle}, becomeUnclaimed}, // IS_OWNER undefined: not the owner's
		{Status{Unclaimed, Idle}, stay},
		{Status{Claimed, Idle}, stay}, // START undefined is not false: keep the claim
		{Status{Claimed, Busy}, stay},
		{Status{Claimed, Suspended}, stay}, // CONTINUE undefined: stay suspended
		{Status{Preempting, Vacating}, stay},
	} {
		if got, why := p.decide(sit(t, p, c.st, 0, 0, time.Second, aliceJob)); got != c.want {
			t.Errorf("%s: %v (%s), want %v", c.st, got, why, c.want)
		}
	}
	// A START that is undefined for a job does not match it.
	ad := sit(t, p, Status{Unclaimed, Idle}, 0, 0, 0, "").machine
	if classad.Match(mustAd(t, `[ Owner = "alice"; Requirements = true ]`), ad) {
		t.Error("a job START is undefined for matched")
	}
	// WANT_VACATE undefined vacates rather than kills.
	pv := mustPolicy(t, Config{Preempt: "true", WantVacate: "NoSuchAttr"})
	if got, _ := pv.decide(sit(t, pv, Status{Claimed, Busy}, 0, 0, 0, aliceJob)); got != vacateJob {
		t.Errorf("PREEMPT with WANT_VACATE undefined: %v, want vacate", got)
	}
}

func TestDecideWithoutWantSuspend(t *testing.T) {
	// SUSPEND is not consulted unless WANT_SUSPEND; PREEMPT then decides,
	// and WANT_VACATE false kills at once.
	p := mustPolicy(t, Config{Suspend: "true", Preempt: "KeyboardIdle < 60", WantVacate: "false"})
	if got, _ := p.decide(sit(t, p, Status{Claimed, Busy}, 1000, 0, time.Minute, aliceJob)); got != stay {
		t.Errorf("SUSPEND without WANT_SUSPEND: %v", got)
	}
	if got, _ := p.decide(sit(t, p, Status{Claimed, Busy}, 10, 0, time.Minute, aliceJob)); got != killJob {
		t.Errorf("PREEMPT with WANT_VACATE false: %v, want kill", got)
	}
}

func TestDecideMaxVacateTime(t *testing.T) {
	p := mustPolicy(t, Config{MaxVacateTime: "30"})
	for _, c := range []struct {
		job  string
		in   time.Duration
		want step
	}{
		{aliceJob, 29 * time.Second, stay},
		{aliceJob, 31 * time.Second, killJob},
		{`[ JobMaxVacateTime = 5 ]`, 6 * time.Second, killJob}, // the job asks for less
		{`[ JobMaxVacateTime = 500 ]`, 31 * time.Second, killJob},
	} {
		if got, _ := p.decide(sit(t, p, Status{Preempting, Vacating}, 0, 0, c.in, c.job)); got != c.want {
			t.Errorf("%s after %v: %v, want %v", c.job, c.in, got, c.want)
		}
	}
	// A MaxVacateTime that is not a number falls back to ten minutes.
	bad := mustPolicy(t, Config{MaxVacateTime: `"soon"`})
	if got, _ := bad.decide(sit(t, bad, Status{Preempting, Vacating}, 0, 0, 9*time.Minute, aliceJob)); got != stay {
		t.Errorf("bad MaxVacateTime after 9 minutes: %v", got)
	}
	if got, _ := bad.decide(sit(t, bad, Status{Preempting, Vacating}, 0, 0, 11*time.Minute, aliceJob)); got != killJob {
		t.Errorf("bad MaxVacateTime after 11 minutes: %v", got)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	_, err := parsePolicy(Config{Start: "true", Suspend: "KeyboardIdle < (60 *", Kill: "a &&& b", MaxVacateTime: "10 *"})
	if err == nil {
		t.Fatal("broken policy parsed")
	}
	for _, want := range []string{"SUSPEND: line 1, column 21", "KILL: line 1, column", "MACHINE_MAX_VACATE_TIME: line 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "START") {
		t.Errorf("error %q blames START", err)
	}
}

func BenchmarkDecideDesktop(b *testing.B) {
	p, err := parsePolicy(desktop)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(100000, 0)
	v := view{id: 1, name: "slot1@desk", status: Status{Claimed, Busy}, enteredState: now, enteredActivity: now}
	m := machine{cpus: 4, loadAvg: 0.2, keyboardIdle: time.Hour, consoleIdle: time.Hour}
	job, err := classad.Parse(aliceJob)
	if err != nil {
		b.Fatal(err)
	}
	c := adConfig{host: "desk", policy: p, numSlots: 1}
	b.ReportAllocs()
	for b.Loop() {
		s := situation{status: v.status, machine: machineAd(c, m, v, now), job: job, inActivity: time.Minute}
		if st, _ := p.decide(s); st != stay {
			b.Fatal(st)
		}
	}
}

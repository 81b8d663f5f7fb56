package matchmaker

import (
	"slices"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

func names(ads []*classad.ClassAd) []string {
	var out []string
	for _, ad := range ads {
		s, _ := ad.EvalString("Name")
		out = append(out, s)
	}
	return out
}

func TestLeaseExpiry(t *testing.T) {
	clock := newFakeClock()
	c := NewCollector(clock)
	text := machineText("slot1@a", StateUnclaimed, 1024, "")
	c.Advertise(TypeMachine, "slot1@a", mustParse(t, text), 10*time.Second)
	c.AdvertiseJobs("agent", "addr", []Request{job(t, "", 1, 0, "alice", "")}, 10*time.Second)

	clock.Advance(9 * time.Second)
	if got := names(c.Query(TypeMachine, classad.Expr{})); !slices.Equal(got, []string{"slot1@a"}) {
		t.Fatalf("before expiry: machines %v", got)
	}
	// A refresh starts a new lease.
	c.Advertise(TypeMachine, "slot1@a", mustParse(t, text), 10*time.Second)

	clock.Advance(1 * time.Second)
	if got := len(c.Query(TypeJob, classad.Expr{})); got != 0 {
		t.Errorf("job set outlived its lease: %d jobs", got)
	}
	if got := names(c.Query(TypeMachine, classad.Expr{})); len(got) != 1 {
		t.Errorf("refreshed machine gone: %v", got)
	}
	clock.Advance(9 * time.Second)
	jobs, machines := c.Snapshot()
	if len(jobs) != 0 || len(machines) != 0 {
		t.Errorf("after expiry: %d jobs, %d machines", len(jobs), len(machines))
	}
}

func TestQueryConstraint(t *testing.T) {
	c := NewCollector(newFakeClock())
	for _, m := range []struct {
		name string
		mem  int
	}{{"slot1@b", 4096}, {"slot1@a", 1024}, {"slot2@a", 2048}} {
		text := machineText(m.name, StateUnclaimed, m.mem, "")
		c.Advertise(TypeMachine, m.name, mustParse(t, text), time.Minute)
	}
	sub := `[ MyType = "Submitter"; Name = "alice@pool"; IdleJobs = 3 ]`
	c.Advertise("Submitter", "alice@pool", mustParse(t, sub), time.Minute)

	for _, tc := range []struct {
		typ, constraint string
		want            []string
	}{
		{TypeMachine, "", []string{"slot1@a", "slot1@b", "slot2@a"}},
		{"machine", "Memory >= 2048", []string{"slot1@b", "slot2@a"}},
		{TypeMachine, `Name == "slot1@a"`, []string{"slot1@a"}},
		{TypeMachine, "NoSuchAttr > 1", nil},
		{TypeMachine, "Memory", nil}, // not a boolean: not true
		{"Submitter", "IdleJobs > 0", []string{"alice@pool"}},
		{"Scheduler", "", nil},
	} {
		var e classad.Expr
		if tc.constraint != "" {
			var err error
			if e, err = classad.ParseExpr(tc.constraint); err != nil {
				t.Fatal(err)
			}
		}
		if got := names(c.Query(tc.typ, e)); !slices.Equal(got, tc.want) {
			t.Errorf("Query(%q, %q) = %v, want %v", tc.typ, tc.constraint, got, tc.want)
		}
	}
}

func TestAdvertiseReportsPossibleMatches(t *testing.T) {
	c := NewCollector(newFakeClock())
	adv := func(state, extra string) bool {
		text := machineText("slot1@a", state, 1024, extra)
		return c.Advertise(TypeMachine, "slot1@a", mustParse(t, text), time.Minute)
	}
	steps := []struct {
		what  string
		state string
		extra string
		want  bool
	}{
		{"new machine in Owner state", "Owner", "", false},
		{"becomes Unclaimed", StateUnclaimed, "", true},
		{"plain refresh", StateUnclaimed, "", false},
		{"load changes", StateUnclaimed, "LoadAvg = 0.5", false},
		{"rank changes", StateUnclaimed, "LoadAvg = 0.5; Rank = Owner == \"alice\"", true},
		{"claimed", "Claimed", "", false},
		{"free again", StateUnclaimed, "", true},
	}
	for _, s := range steps {
		if got := adv(s.state, s.extra); got != s.want {
			t.Errorf("%s: Advertise = %v, want %v", s.what, got, s.want)
		}
	}
	sub := `[ Name = "x" ]`
	if c.Advertise("Submitter", "x", mustParse(t, sub), time.Minute) {
		t.Error("a submitter ad asked for a cycle")
	}
}

func TestAdvertiseJobsReportsNewIDs(t *testing.T) {
	c := NewCollector(newFakeClock())
	j1, j2, j3 := job(t, "", 1, 0, "alice", ""), job(t, "", 1, 1, "alice", ""), job(t, "", 2, 0, "alice", "")
	if !c.AdvertiseJobs("ag", "a:1", []Request{j1, j2}, time.Minute) {
		t.Error("first set: no cycle asked for")
	}
	if c.AdvertiseJobs("ag", "a:1", []Request{j2, j1}, time.Minute) {
		t.Error("same ids again: cycle asked for")
	}
	jobs, _ := c.Snapshot()
	c.Claim(matchOf(jobs[0], Machine{}))
	if c.AdvertiseJobs("ag", "a:1", []Request{j1, j2}, time.Minute) {
		t.Error("matched job advertised again before the agent heard: cycle asked for")
	}
	if c.AdvertiseJobs("ag", "a:1", []Request{j1}, time.Minute) {
		t.Error("a shrinking set asked for a cycle")
	}
	if !c.AdvertiseJobs("ag", "a:1", []Request{j1, j3}, time.Minute) {
		t.Error("new id 2.0: no cycle asked for")
	}
	if !c.AdvertiseJobs("other", "b:1", []Request{j1}, time.Minute) {
		t.Error("another agent's first set: no cycle asked for")
	}
	jobs, _ = c.Snapshot()
	var got []string
	for _, j := range jobs {
		got = append(got, j.Agent+"/"+j.ID+"@"+j.AgentAddr)
	}
	if want := []string{"ag/1.0@a:1", "ag/2.0@a:1", "other/1.0@b:1"}; !slices.Equal(got, want) {
		t.Errorf("snapshot jobs %v, want %v", got, want)
	}
}

func TestInvalidate(t *testing.T) {
	c := NewCollector(newFakeClock())
	text := machineText("slot1@a", StateUnclaimed, 1024, "")
	c.Advertise(TypeMachine, "slot1@a", mustParse(t, text), time.Minute)
	c.AdvertiseJobs("ag", "a:1", []Request{job(t, "", 1, 0, "alice", "")}, time.Minute)
	if !c.Invalidate("MACHINE", "slot1@a") || !c.Invalidate(TypeJob, "ag") {
		t.Fatal("Invalidate did not find the ads")
	}
	if c.Invalidate(TypeMachine, "slot1@a") {
		t.Error("second Invalidate found the ad again")
	}
	if jobs, machines := c.Snapshot(); len(jobs)+len(machines) != 0 {
		t.Errorf("left: %d jobs, %d machines", len(jobs), len(machines))
	}
}

func TestClaimAndUnclaim(t *testing.T) {
	c := NewCollector(newFakeClock())
	text := machineText("slot1@a", StateUnclaimed, 1024, "")
	orig := mustParse(t, text)
	c.Advertise(TypeMachine, "slot1@a", orig, time.Minute)
	c.AdvertiseJobs("ag", "a:1", []Request{job(t, "", 1, 0, "alice", ""), job(t, "", 1, 1, "alice", "")}, time.Minute)

	jobs, machines := c.Snapshot()
	c.Claim(matchOf(jobs[0], machines[0]))
	jobs2, machines2 := c.Snapshot()
	if s, _ := machines2[0].Ad.EvalString("State"); s != StateMatched {
		t.Errorf("machine state after claim %q, want Matched", s)
	}
	if s, _ := orig.EvalString("State"); s != StateUnclaimed {
		t.Errorf("claim modified the advertised ad in place: State %q", s)
	}
	if len(jobs2) != 1 || jobs2[0].ID != "1.1" {
		t.Errorf("jobs after claim %v, want just 1.1", jobs2)
	}

	c.Unclaim(matchOf(jobs[0], Machine{}))
	c.Unclaim(matchOf(jobs[0], Machine{}))
	if jobs3, _ := c.Snapshot(); len(jobs3) != 2 {
		t.Errorf("after unclaim: %d jobs, want 2", len(jobs3))
	}

	// A job the agent no longer advertises does not come back.
	c.Claim(matchOf(jobs[0], machines2[0]))
	c.AdvertiseJobs("ag", "a:1", []Request{job(t, "", 1, 1, "alice", "")}, time.Minute)
	c.Unclaim(matchOf(jobs[0], Machine{}))
	if jobs4, _ := c.Snapshot(); len(jobs4) != 1 {
		t.Errorf("unclaim revived a job the agent dropped: %d jobs", len(jobs4))
	}
}

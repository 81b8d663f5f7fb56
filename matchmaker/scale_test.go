package matchmaker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// randomPool builds machines and requests whose attributes come from small
// domains, so that classes, index windows, ties and rejections all occur.
func randomPool(t testing.TB, rng *rand.Rand, nm, nr int) ([]Machine, []Request) {
	arches := []string{"X86_64", "aarch64", "x86_64"}
	var machines []Machine
	for i := range nm {
		name := fmt.Sprintf("slot%d@h%03d", i%2, i/2)
		extra := fmt.Sprintf(`Arch = %q; KFlops = %d; LoadAvg = %d; Department = "d%d"; Disk = %d;
			Requirements = LoadAvg < 2 && TARGET.RequestMemory <= MY.Memory; Rank = TARGET.Department == MY.Department`,
			arches[rng.IntN(3)], 100*rng.IntN(3), rng.IntN(3), rng.IntN(2), 1000*(1+rng.IntN(3)))
		if rng.IntN(5) == 0 {
			extra += "; Memory = 256 * 4" // an expression: deviant in the index
		}
		state := StateUnclaimed
		if rng.IntN(6) == 0 {
			state = StateClaimed
		}
		machines = append(machines, machine(t, name, state, 512<<rng.IntN(3), extra))
	}
	var reqs []Request
	for i := range nr {
		extra := fmt.Sprintf(`RequestMemory = %d; Department = "d%d"; DiskUsage = %d;
			Requirements = (TARGET.Arch == %q) && TARGET.Memory >= MY.RequestMemory && TARGET.Disk > DiskUsage; Rank = %s`,
			512<<rng.IntN(4), rng.IntN(2), 1000*rng.IntN(3), arches[rng.IntN(2)],
			[]string{"TARGET.KFlops", "0", "TARGET.Memory + TARGET.KFlops", "-TARGET.Disk"}[rng.IntN(4)])
		r := job(t, "ag", i+1, 0, fmt.Sprintf("u%d", rng.IntN(3)), extra)
		for p := range rng.IntN(4) {
			r.JobIDs = append(r.JobIDs, fmt.Sprintf("%d.%d", i+1, p+1))
		}
		reqs = append(reqs, r)
	}
	return machines, reqs
}

// TestNegotiateMatchesAreBestAndMaximal checks, on random pools, that
// classes and the index change nothing a job can see: each match satisfies
// both Requirements, gets a machine of the highest job Rank, then machine
// Rank, among those still free, and no request is left wanting while a
// free machine would match it.
func TestNegotiateMatchesAreBestAndMaximal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 40 {
		machines, reqs := randomPool(t, rng, 60, 25)
		res := Negotiator{Priorities: prios{"u0": 1, "u1": 2, "u2": 4}}.Negotiate(reqs, machines)
		free := map[string]Machine{}
		for _, m := range machines {
			if state(m.Ad) == StateUnclaimed {
				free[m.Name] = m
			}
		}
		wanted := map[string]int{}
		for _, r := range reqs {
			wanted[r.ID] = len(r.JobIDs)
		}
		seenJob := map[string]bool{}
		for _, m := range res.Matches {
			if m.Preempts != nil {
				t.Fatalf("round %d: preemption without CurrentRank or PreemptionRequirements", round)
			}
			if seenJob[m.Job.ID] {
				t.Fatalf("round %d: job %s matched twice", round, m.Job.ID)
			}
			seenJob[m.Job.ID] = true
			if _, ok := free[m.Machine.Name]; !ok {
				t.Fatalf("round %d: %s given while not free", round, m.Machine.Name)
			}
			if !classad.Match(m.Job.Ad, m.Machine.Ad) {
				t.Fatalf("round %d: %s and %s do not match", round, m.Job.ID, m.Machine.Name)
			}
			jr, mr := classad.Rank(m.Job.Ad, m.Machine.Ad), classad.Rank(m.Machine.Ad, m.Job.Ad)
			for _, o := range free {
				if !classad.Match(m.Job.Ad, o.Ad) {
					continue
				}
				ojr, omr := classad.Rank(m.Job.Ad, o.Ad), classad.Rank(o.Ad, m.Job.Ad)
				if ojr > jr || ojr == jr && omr > mr {
					t.Fatalf("round %d: job %s got %s (rank %v/%v) while %s (rank %v/%v) was free", round, m.Job.ID, m.Machine.Name, jr, mr, o.Name, ojr, omr)
				}
			}
			delete(free, m.Machine.Name)
			wanted[m.Request]--
		}
		for _, r := range reqs {
			if wanted[r.ID] == 0 {
				continue
			}
			for _, o := range free {
				if classad.Match(r.Ad, o.Ad) {
					t.Fatalf("round %d: request %s wants %d more while %s matches and is free", round, r.ID, wanted[r.ID], o.Name)
				}
			}
		}
		if res.Rejections != res.IdleJobs-len(res.Matches) {
			t.Fatalf("round %d: %d rejections of %d jobs with %d matches", round, res.Rejections, res.IdleJobs, len(res.Matches))
		}
	}
}

func TestNegotiateFairShare(t *testing.T) {
	var machines []Machine
	for i := range 8 {
		machines = append(machines, machine(t, fmt.Sprintf("slot%d@a", i), StateUnclaimed, 1024, ""))
	}
	many := func(owner string, cluster, n int) Request { return manyJobs(t, owner, cluster, n, "") }
	count := sharesOf
	n := Negotiator{Priorities: prios{"alice": 1, "bob": 3}}
	// Weights 1 and 1/3: alice's share is 3/4 of 8 machines, bob's 1/4.
	res := n.Negotiate([]Request{many("bob", 2, 10), many("alice", 1, 10)}, machines)
	if got := count(res); got["alice"] != 6 || got["bob"] != 2 {
		t.Errorf("shares %v, want alice 6, bob 2", got)
	}
	// The better priority negotiates first.
	if o, _ := res.Matches[0].Job.Ad.EvalString("Owner"); o != "alice" {
		t.Errorf("first match for %s, want alice", o)
	}
	// What alice cannot use goes round again to bob.
	res = n.Negotiate([]Request{many("bob", 2, 10), many("alice", 1, 2)}, machines)
	if got := count(res); got["alice"] != 2 || got["bob"] != 6 {
		t.Errorf("shares %v, want alice 2, bob 6", got)
	}
}

func TestAccountantDecay(t *testing.T) {
	a := NewAccountant(time.Hour, 1, map[string]float64{"bob": 10})
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	a.Update(t0, map[string]int{"alice": 10, "bob": 0})
	if p := a.Priority("alice"); p != 0.5 {
		t.Errorf("first update changed a priority: %v", p)
	}
	a.Update(t0.Add(time.Hour), map[string]int{"alice": 0})
	// One half-life at 10 slots from 0.5: 0.5/2 + 10/2.
	if p := a.Priority("alice"); math.Abs(p-5.25) > 1e-9 {
		t.Errorf("alice after one half-life at 10 slots: %v, want 5.25", p)
	}
	a.Update(t0.Add(2*time.Hour), map[string]int{})
	if p := a.Priority("alice"); math.Abs(p-2.625) > 1e-9 {
		t.Errorf("alice after one idle half-life: %v, want 2.625", p)
	}
	if p := a.Priority("bob"); p != 5 {
		t.Errorf("bob, idle with factor 10: %v, want 5", p)
	}
	if p := a.Priority("nobody"); p != 0.5 {
		t.Errorf("unknown user: %v, want 0.5", p)
	}
	users := a.Users()
	if len(users) != 2 || users[0].Name != "alice" || users[0].AccumulatedUsage != 10*time.Hour {
		t.Errorf("users %+v", users)
	}
	if s, _ := users[1].Ad().EvalString("MyType"); s != TypeAccounting {
		t.Errorf("accounting ad type %q", s)
	}
}

func TestPreemptionByRank(t *testing.T) {
	claimed := machine(t, "slot1@a", StateClaimed, 1024, `RemoteOwner = "bob"; JobId = "7.0"; CurrentRank = 0;
		Rank = TARGET.Department == "CS"`)
	cs := job(t, "ag", 1, 0, "alice", `Department = "CS"`)
	other := job(t, "ag", 2, 0, "carol", `Department = "Physics"`)
	res := Negotiator{}.Negotiate([]Request{other, cs}, []Machine{claimed})
	if len(res.Matches) != 1 || res.Matches[0].Job.ID != "1.0" || res.Preemptions != 1 {
		t.Fatalf("matches %v, want 1.0 preempting", pairs(res))
	}
	if p := res.Matches[0].Preempts; p == nil || p.Reason != "rank" || p.RemoteOwner != "bob" || p.JobID != "7.0" {
		t.Errorf("preemption %+v", p)
	}
	// One machine is preempted once in a cycle, however many want it.
	cs2 := job(t, "ag", 1, 1, "alice", `Department = "CS"`)
	if res := (Negotiator{}).Negotiate([]Request{cs, cs2}, []Machine{claimed}); res.Preemptions != 1 || len(res.Matches) != 1 {
		t.Errorf("one claimed machine: %v, %d preemptions; want one", pairs(res), res.Preemptions)
	}
	// A machine already running a job it ranks as high is left alone.
	claimed = machine(t, "slot1@a", StateClaimed, 1024, `RemoteOwner = "bob"; CurrentRank = 1; Rank = TARGET.Department == "CS"`)
	if res := (Negotiator{}).Negotiate([]Request{cs}, []Machine{claimed}); len(res.Matches) != 0 {
		t.Errorf("preempted an equally ranked job: %v", pairs(res))
	}
	// Free machines come before preemption.
	free := machine(t, "slot2@a", StateUnclaimed, 1024, "")
	claimed = machine(t, "slot1@a", StateClaimed, 1024, `RemoteOwner = "bob"; CurrentRank = 0; Rank = TARGET.Department == "CS"`)
	res = Negotiator{}.Negotiate([]Request{cs}, []Machine{claimed, free})
	if got := pairs(res); len(got) != 1 || got[0] != "1.0->slot2@a" || res.Preemptions != 0 {
		t.Errorf("matches %v, want the free slot", got)
	}
}

func TestPreemptionByPriority(t *testing.T) {
	rule, err := classad.ParseExpr("RemoteUserPrio > SubmitterUserPrio * 1.2")
	if err != nil {
		t.Fatal(err)
	}
	claimed := machine(t, "slot1@a", StateClaimed, 1024, `RemoteOwner = "bob"; JobId = "7.0"`)
	alice := job(t, "ag", 1, 0, "alice", "")
	n := Negotiator{Priorities: prios{"alice": 1, "bob": 10}, PreemptionRequirements: rule}
	res := n.Negotiate([]Request{alice}, []Machine{claimed})
	if len(res.Matches) != 1 || res.Matches[0].Preempts == nil || res.Matches[0].Preempts.Reason != "priority" {
		t.Fatalf("matches %v, want alice preempting bob", pairs(res))
	}
	// Worse priority, no preemption; nor of one's own job; nor without a rule.
	n.Priorities = prios{"alice": 10, "bob": 1}
	if res := n.Negotiate([]Request{alice}, []Machine{claimed}); len(res.Matches) != 0 {
		t.Errorf("worse priority preempted: %v", pairs(res))
	}
	n.Priorities = prios{"alice": 1, "bob": 10}
	bob := job(t, "ag", 2, 0, "bob", "")
	if res := n.Negotiate([]Request{bob}, []Machine{claimed}); len(res.Matches) != 0 {
		t.Errorf("bob preempted himself: %v", pairs(res))
	}
	n.PreemptionRequirements = classad.Expr{}
	if res := n.Negotiate([]Request{alice}, []Machine{claimed}); len(res.Matches) != 0 {
		t.Errorf("preempted without PREEMPTION_REQUIREMENTS: %v", pairs(res))
	}
}

func TestMachineClassesAndSignificantAttributes(t *testing.T) {
	var machines []Machine
	for i := range 6 {
		// LoadAvg differs, but only a self-only conjunct reads it.
		machines = append(machines, machine(t, fmt.Sprintf("slot%d@a", i), StateUnclaimed, 1024<<(i%2),
			fmt.Sprintf(`LoadAvg = 0.0%d; Requirements = LoadAvg < 0.05 && TARGET.RequestMemory <= MY.Memory; Rank = TARGET.Department == "CS"`, i)))
	}
	res := Negotiator{}.Negotiate([]Request{job(t, "ag", 1, 0, "alice", "")}, machines)
	if res.MachineClasses != 2 {
		t.Errorf("%d machine classes, want 2 (by Memory)", res.MachineClasses)
	}
	want := []string{"department", "requestmemory"}
	if fmt.Sprint(res.SignificantAttributes) != fmt.Sprint(want) {
		t.Errorf("significant attributes %v, want %v", res.SignificantAttributes, want)
	}
}

func TestBoundsOfRequirements(t *testing.T) {
	ad := mustParse(t, `[ DiskUsage = 6000; Requirements = ((other.Arch=="INTEL" && other.OpSys=="LINUX") && other.Disk > my.DiskUsage) && 1024 <= Memory && (Cpus > 1 || Gpus > 0) && TARGET.Name =?= "x" ]`)
	p := &plan{ad: ad}
	p.analyze()
	got := fmt.Sprint(p.bounds)
	want := `[{arch == 0 intel true} {opsys == 0 linux true} {disk > 6000  false} {memory >= 1024  false}]`
	if got != want {
		t.Errorf("bounds %s, want %s", got, want)
	}
}

func TestParseRequest(t *testing.T) {
	r, err := parseRequest(`[ Owner = "alice"; AutoClusterId = 12; JobIds = {"3.0", "3.1"}; Requirements = true ]`)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "ac12" || fmt.Sprint(r.JobIDs) != "[3.0 3.1]" {
		t.Errorf("request %s with jobs %v", r.ID, r.JobIDs)
	}
	if _, ok := r.Ad.Lookup(AttrJobIDs); ok {
		t.Error("stored ad keeps the job list")
	}
	for _, bad := range []string{`[ AutoClusterId = 1; JobIds = "3.0" ]`, `[ AutoClusterId = 1; JobIds = {3} ]`, `[ JobIds = {"3.0"} ]`} {
		if _, err := parseRequest(bad); err == nil {
			t.Errorf("parseRequest(%s) accepted it", bad)
		}
	}
	c := NewCollector(newFakeClock())
	c.AdvertiseJobs("ag", "a:1", []Request{r}, time.Minute)
	reqs, _ := c.Snapshot()
	c.Claim(Match{Job: Job{ID: "3.0", Agent: "ag"}, Request: r.ID})
	if reqs2, _ := c.Snapshot(); len(reqs2) != 1 || fmt.Sprint(reqs2[0].JobIDs) != "[3.1]" || len(reqs[0].JobIDs) != 2 {
		t.Errorf("after a match: %v; the earlier snapshot: %v", reqs2[0].JobIDs, reqs[0].JobIDs)
	}
	c.Unclaim(Match{Job: Job{ID: "3.0", Agent: "ag"}, Request: r.ID})
	if reqs3, _ := c.Snapshot(); len(reqs3[0].JobIDs) != 2 {
		t.Errorf("after unclaim: %v", reqs3[0].JobIDs)
	}
}

func TestEqualRequestsShareAMatchList(t *testing.T) {
	machines := []Machine{machine(t, "slot1@a", StateUnclaimed, 1024, ""), machine(t, "slot2@a", StateUnclaimed, 2048, ""),
		machine(t, "slot3@a", StateUnclaimed, 4096, "")}
	reqs := []Request{
		job(t, "ag1", 1, 0, "alice", "Rank = TARGET.Memory; Cmd = \"a\""),
		job(t, "ag2", 7, 3, "bob", "Rank = TARGET.Memory; Cmd = \"b\""),
		job(t, "ag2", 8, 0, "bob", "Rank = TARGET.Memory; RequestMemory = 2000"),
	}
	res := Negotiator{Priorities: prios{"alice": 1, "bob": 1}}.Negotiate(reqs, machines)
	if res.MatchLists != 2 {
		t.Errorf("%d matchlists built, want 2: alice's and bob's first request are alike", res.MatchLists)
	}
	if got := pairs(res); len(got) != 2 || got[0] != "1.0->slot3@a" || got[1] != "7.3->slot2@a" {
		t.Errorf("matches %v", got)
	}
}

// TestNegotiateAccountingGroups: a job in an accounting group negotiates,
// and its slot is charged, as the group's user (group_physics.alice),
// apart from the same owner's other jobs; a claimed slot publishing the
// group is counted for it.
func TestNegotiateAccountingGroups(t *testing.T) {
	var machines []Machine
	for i := range 4 {
		machines = append(machines, machine(t, fmt.Sprintf("slot%d@a", i), StateUnclaimed, 1024, ""))
	}
	group := manyJobs(t, "alice", 1, 4, `AccountingGroup = "group_physics.alice"`)
	own := manyJobs(t, "alice", 2, 4, "")
	if s := submitter(&group); s != "group_physics.alice" {
		t.Errorf("submitter of a job in a group: %q", s)
	}
	// group_physics.alice has used the pool much, alice little: alice
	// gets the larger share, as a submitter of her own.
	n := Negotiator{Priorities: prios{"alice": 1, "group_physics.alice": 3}}
	got := sharesOf(n.Negotiate([]Request{group, own}, machines))
	if got["alice"] != 3 || got["group_physics.alice"] != 1 {
		t.Errorf("shares %v, want alice 3, group_physics.alice 1", got)
	}
	usage := usageOf([]Machine{
		machine(t, "slot1@b", StateClaimed, 1024, `RemoteOwner = "alice"; AccountingGroup = "group_physics.alice"`),
		machine(t, "slot2@b", StateClaimed, 1024, `RemoteOwner = "alice"`),
	})
	if usage["group_physics.alice"] != 1 || usage["alice"] != 1 {
		t.Errorf("usage %v, want a slot each to group_physics.alice and alice", usage)
	}
}

// A nice user's priority factor is the worst, unless the administrator
// sets another.
func TestNiceUserFactor(t *testing.T) {
	a := NewAccountant(time.Hour, 1, map[string]float64{"alice": 10})
	if p, want := a.Priority("nice-user.bob"), 0.5*NiceUserFactor; p != want {
		t.Errorf("nice-user.bob's priority %v, want %v", p, want)
	}
	if p := a.Priority("alice"); p != 5 {
		t.Errorf("alice's priority %v, want 5", p)
	}
	if err := a.SetFactor("nice-user.bob", 2); err != nil {
		t.Fatal(err)
	}
	if p := a.Priority("nice-user.bob"); p != 1 {
		t.Errorf("nice-user.bob's priority after SetFactor: %v, want 1", p)
	}
}

package matchmaker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker/gang"
	"harrier.dev/harrier/wire"
)

// gangMachine is a slot of host on subnet.
func gangMachine(t testing.TB, host, state, subnet string) Machine {
	name := "slot1@" + host
	return Machine{Name: name, Ad: mustParse(t, fmt.Sprintf(`[ MyType = "Machine"; Name = %q; Machine = %q;
		StartdAddr = "%s:1"; State = %q; Arch = "X86_64"; OpSys = "LINUX"; Memory = 1024; Subnet = %q;
		Requirements = TARGET.RequestMemory <= MY.Memory ]`, name, host, host, state, subnet))}
}

// licenseJob asks for a machine and a seat of license sim; the license
// port tells the license which machine it would run on.
func licenseJob(t testing.TB, cluster int, owner string) Request {
	return job(t, "ag", cluster, 0, owner, `Ports = {
		[ Label = Cpu; Requirements = Cpu.Arch == "X86_64" && Cpu.Memory >= RequestMemory ],
		[ Label = License; Host = Cpu.Machine; Requirements = License.App == "sim" ] }`)
}

// simLicense is valid on exec2 and exec3 only.
func simLicense(t testing.TB, seats int) *classad.ClassAd {
	return mustParse(t, fmt.Sprintf(`[ Name = "sim"; Type = "License"; App = "sim"; Seats = %d;
		Ports = { [ Label = Job; Requirements = member(Job.Host, { "exec2", "exec3" }) ] } ]`, seats))
}

func gangPairs(gs Gangs) []string {
	var out []string
	for _, g := range gs.Matches {
		var names []string
		for _, m := range g.Machines {
			names = append(names, m.Name)
		}
		out = append(out, g.Job.ID+"->"+strings.Join(append(names, g.Licenses...), "+"))
	}
	return out
}

// A job that needs a machine and a license gets a machine the license is
// valid on, skipping the better-named one it is not; an ordinary job
// goes on to Negotiate with the machines the gang left.
func TestMarshalGangsLicenseValidOnSomeMachines(t *testing.T) {
	machines := []Machine{gangMachine(t, "exec1", StateUnclaimed, "a"), gangMachine(t, "exec2", StateUnclaimed, "a")}
	reqs := []Request{job(t, "ag", 1, 0, "alice", ""), licenseJob(t, 2, "bob")}
	gs := Negotiator{}.MarshalGangs(reqs, machines, []*classad.ClassAd{simLicense(t, 1)})
	if got := gangPairs(gs); !slices.Equal(got, []string{"2.0->slot1@exec2+sim"}) {
		t.Fatalf("gangs %v, want 2.0 on exec2 with sim", got)
	}
	if port := gs.Matches[0].Machines[0]; port.Label != "Cpu" || port.Port == nil {
		t.Errorf("machine docked at %q with port %v, want the job's Cpu port", port.Label, port.Port)
	}
	if len(gs.Requests) != 1 || gs.Requests[0].ID != "1.0" || len(gs.Machines) != 1 || gs.Machines[0].Name != "slot1@exec1" {
		t.Fatalf("left for Negotiate: %v and %v", gs.Requests, gs.Machines)
	}
	if got := pairs(Negotiator{}.Negotiate(gs.Requests, gs.Machines)); !slices.Equal(got, []string{"1.0->slot1@exec1"}) {
		t.Errorf("ordinary job: %v", got)
	}
}

// Two gangs want the one seat: the submitter of better priority gets it,
// the other forms no gang and keeps its machine free.
func TestMarshalGangsOneSeatTwoGangs(t *testing.T) {
	machines := []Machine{gangMachine(t, "exec2", StateUnclaimed, "a"), gangMachine(t, "exec3", StateUnclaimed, "a")}
	reqs := []Request{licenseJob(t, 1, "alice"), licenseJob(t, 2, "bob")}
	n := Negotiator{Priorities: fixedPriorities{"alice": 10, "bob": 1}}
	gs := n.MarshalGangs(reqs, machines, []*classad.ClassAd{simLicense(t, 1)})
	if got := gangPairs(gs); !slices.Equal(got, []string{"2.0->slot1@exec2+sim"}) {
		t.Fatalf("gangs %v, want bob's alone", got)
	}
	if len(gs.Machines) != 1 || gs.GangJobs != 2 || len(gs.Requests) != 0 {
		t.Errorf("left %d machines, %d gang jobs, %d requests", len(gs.Machines), gs.GangJobs, len(gs.Requests))
	}
	// With two seats both run.
	gs = n.MarshalGangs(reqs, machines, []*classad.ClassAd{simLicense(t, 1), simLicense(t, 1)})
	if len(gs.Matches) != 2 {
		t.Errorf("two seats: gangs %v", gangPairs(gs))
	}
}

type fixedPriorities map[string]float64

func (p fixedPriorities) Priority(s string) float64 { return p[s] }

// A job that needs two machines on one subnet (the thesis's Figure 8)
// gets two of the subnet that has two free, and none that is claimed.
func TestMarshalGangsTwoMachinesOneSubnet(t *testing.T) {
	machines := []Machine{
		gangMachine(t, "a1", StateUnclaimed, "a"), gangMachine(t, "b1", StateUnclaimed, "b"),
		gangMachine(t, "b2", StateClaimed, "b"), gangMachine(t, "c1", StateUnclaimed, "c"), gangMachine(t, "c2", StateUnclaimed, "c"),
	}
	pair := job(t, "ag", 1, 0, "alice", `Ports = {
		[ Label = Host1; Requirements = Host1.Arch == "X86_64" ],
		[ Label = Host2; Requirements = Host2.Arch == "X86_64" && Host1.Subnet == Host2.Subnet ] }`)
	gs := Negotiator{}.MarshalGangs([]Request{pair}, machines, nil)
	if got := gangPairs(gs); !slices.Equal(got, []string{"1.0->slot1@c1+slot1@c2"}) {
		t.Fatalf("gangs %v", got)
	}
	if gs.Matches[0].Machines[1].Label != "Host2" {
		t.Errorf("second machine docked at %q", gs.Matches[0].Machines[1].Label)
	}
}

// Without a request that has Ports, the input passes through as it came.
func TestMarshalGangsPassesOrdinaryRequests(t *testing.T) {
	machines := []Machine{machine(t, "slot1@a", StateUnclaimed, 1024, "")}
	reqs := []Request{job(t, "ag", 1, 0, "alice", "")}
	gs := Negotiator{}.MarshalGangs(reqs, machines, []*classad.ClassAd{simLicense(t, 1)})
	if &gs.Requests[0] != &reqs[0] || &gs.Machines[0] != &machines[0] || len(gs.Matches) != 0 {
		t.Errorf("ordinary input was not passed through")
	}
}

// Seats in use are counted from the claims the machine ads show and from
// gangs matched but not yet claimed; a restarted matchmaker offers none
// until the startds have had time to advertise.
func TestLicenseSeats(t *testing.T) {
	now := time.Now()
	p := newLicensePool([]*classad.ClassAd{simLicense(t, 2)}, now.Add(time.Minute))
	claimed := gangMachine(t, "exec2", StateClaimed, "a")
	claimed.Ad.SetValue(AttrGangLicenses, classad.List(classad.String("sim")))
	free := gangMachine(t, "exec3", StateUnclaimed, "a")
	machines := []Machine{claimed, free}
	if seats, used := p.offers(machines, now); len(seats) != 0 || used["sim"] != 1 {
		t.Fatalf("during the hold: %d seats offered, %v used", len(seats), used)
	}
	now = now.Add(time.Minute)
	seats, used := p.offers(machines, now)
	if len(seats) != 1 {
		t.Fatalf("one of two seats held by a claim: %d offered", len(seats))
	}
	if n, _ := p.ads(used)[0].EvalInt(AttrSeatsInUse); n != 1 {
		t.Errorf("SeatsInUse = %d", n)
	}
	// The free machine is matched with the other seat: the collector's
	// Matched copy keeps it pending, and so does the startd's own Matched ad.
	matched := free.Ad.Copy()
	matched.SetString("State", StateMatched)
	p.hold(free.Name, matched, []string{"sim"})
	if seats, _ := p.offers([]Machine{claimed, {Name: free.Name, Ad: matched}}, now); len(seats) != 0 {
		t.Errorf("seat pending: %d offered", len(seats))
	}
	startdMatched := matched.Copy()
	if seats, _ := p.offers([]Machine{claimed, {Name: free.Name, Ad: startdMatched}}, now); len(seats) != 0 {
		t.Errorf("seat pending while the startd says Matched: %d offered", len(seats))
	}
	// The startd refuses the claim: the seat comes back.
	if seats, _ := p.offers(machines, now); len(seats) != 1 {
		t.Errorf("claim refused: %d offered", len(seats))
	}
	// The first claim ends.
	if seats, _ := p.offers([]Machine{gangMachine(t, "exec2", StateUnclaimed, "a"), free}, now); len(seats) != 2 {
		t.Errorf("every claim over: %d offered", len(seats))
	}
}

func TestReadLicenseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "licenses")
	text := `// two licenses
[ Name = "sim"; App = "sim"; Seats = 2;
  Ports = { [ Label = Job; Requirements = Job.Host == "exec2" ] } ]
[ Name = "cad"; Note = "a ] in a string"; Requirements = true ]
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ads, err := ReadLicenseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 2 || licenseName(ads[1]) != "cad" || !isLicense(ads[0]) {
		t.Fatalf("read %v", ads)
	}
	for _, bad := range []string{`[ Seats = 1 ]`, `[ Name = "a" ] [ Name = "a" ]`, `[ Name = "a"; Seats = "x" ]`, `[ Name = "a"`, `x [ Name = "a" ]`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadLicenseFile(path); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// The driver tells every startd of a gang and then the agent, once, with
// every member; the first machine's job ad holds the licenses, and the
// seat is not offered again while the claim is pending.
func TestDriverNotifiesGang(t *testing.T) {
	n := newFakeNotifier()
	d, ep := startDriver(t, n)
	d.licenses = newLicensePool([]*classad.ClassAd{simLicense(t, 1)}, time.Time{})
	for _, m := range []Machine{gangMachine(t, "exec2", StateUnclaimed, "a"), gangMachine(t, "exec3", StateUnclaimed, "a")} {
		if _, err := ep.Advertise(asStartd, &wire.AdvertiseRequest{Type: TypeMachine, Name: m.Name, Ad: m.Ad.String(), LeaseSeconds: 60}); err != nil {
			t.Fatal(err)
		}
	}
	var ads []string
	for _, r := range []Request{licenseJob(t, 1, "alice"), licenseJob(t, 2, "alice")} {
		r.Ad.SetValue(AttrJobIDs, classad.List(classad.String(r.JobIDs[0])))
		r.Ad.SetInt(AttrAutoClusterID, int64(len(ads)))
		ads = append(ads, r.Ad.String())
	}
	if _, err := ep.AdvertiseJobs(asAgent, &wire.AdvertiseJobsRequest{Agent: "ag", AgentAddr: "127.0.0.1:2", Ads: ads, LeaseSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	req := n.waitMatch(t)
	if req.JobId != "1.0" || len(req.Gang) != 1 || req.Gang[0].Slot != "slot1@exec2" || req.ClaimId != req.Gang[0].ClaimId ||
		!slices.Equal(req.Licenses, []string{"sim"}) {
		t.Fatalf("agent told %+v", req)
	}
	job := mustParse(t, req.Gang[0].JobAd)
	if held := heldLicenses(job); !slices.Equal(held, []string{"sim"}) {
		t.Errorf("first machine's job ad holds %v", held)
	}
	if _, ports := job.Lookup("Ports"); ports || !job.Eval("Requirements").IsTrue() {
		t.Errorf("member job ad: %s", job)
	}
	d.cycle(context.Background())
	select {
	case r := <-n.told:
		t.Errorf("second gang formed with the seat pending: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.startd) != 1 || n.startd[0].ClaimId != req.ClaimId {
		t.Errorf("startds told %v", n.startd)
	}
}

// BenchmarkMarshalGangs measures a cycle's gangmatching (DYN): Ordinary
// is the cost MarshalGangs adds to a cycle without gangs (the scan for
// Ports); the others are cycles of the thesis's job-and-license gangs
// with a seat per machine (100%) or per two machines (50%), each valid
// on a quarter of the machines (by Key, read through the job's port).
func BenchmarkMarshalGangs(b *testing.B) {
	const machines, jobs = 1000, 2000
	ms := make([]Machine, machines)
	for i := range ms {
		name := fmt.Sprintf("slot1@exec%d", i)
		ms[i] = Machine{Name: name, Ad: mustParse(b, fmt.Sprintf(`[ Name = %q; Key = %d; State = "Unclaimed"; OpSys = "LINUX";
			Memory = %d; Requirements = TARGET.RequestMemory <= MY.Memory ]`, name, i, 512<<(i%3)))}
	}
	n := Negotiator{GangAlgorithm: gang.DYN}
	b.Run("Ordinary", func(b *testing.B) {
		reqs := make([]Request, jobs)
		for i := range reqs {
			reqs[i] = job(b, "ag", i/100, i%100, fmt.Sprintf("u%d", i%10), fmt.Sprintf("QDate = %d", i))
		}
		b.ReportAllocs()
		for b.Loop() {
			n.MarshalGangs(reqs, ms, nil)
		}
	})
	for _, share := range []int{1, 2} {
		b.Run(fmt.Sprintf("Licenses=%d%%", 100/share), func(b *testing.B) {
			reqs := make([]Request, jobs)
			for i := range reqs {
				reqs[i] = job(b, "ag", i, 0, fmt.Sprintf("u%d", i%10), `Ports = {
					[ Label = Cpu; Requirements = Cpu.OpSys == "LINUX" && Cpu.Memory >= RequestMemory ],
					[ Label = License; HostId = Cpu.Key; Requirements = License.App == "sim" ] }`)
			}
			seats := make([]*classad.ClassAd, machines/share)
			for i := range seats {
				lo := i % 4 * machines / 4
				seats[i] = mustParse(b, fmt.Sprintf(`[ Name = "sim"; Type = "License"; App = "sim";
					Ports = { [ Label = Job; Requirements = Job.HostId >= %d && Job.HostId < %d ] } ]`, lo, lo+machines/4))
			}
			b.ReportAllocs()
			var gs Gangs
			for b.Loop() {
				gs = n.MarshalGangs(reqs, ms, seats)
			}
			b.ReportMetric(float64(len(gs.Matches)), "gangs")
			b.ReportMetric(float64(len(gs.Matches))*float64(b.N)/b.Elapsed().Seconds(), "gangs/s")
			b.ReportMetric(float64(gs.Stats.Probes)/float64(len(gs.Matches)), "probes/gang")
			b.ReportMetric(float64(gs.Stats.Evaluations)/float64(len(gs.Matches)), "evals/gang")
		})
	}
}

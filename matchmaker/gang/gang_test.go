package gang

import (
	"errors"
	"testing"

	"harrier.dev/harrier/classad"
)

func mustParse(t testing.TB, src string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(src)
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	return ad
}

var algorithms = []Algorithm{Naive, LR, DYN}

// The gang of the thesis's Figure 32: a job with a Cpu and a License
// port, a machine whose Key the License port passes on as HostId, and a
// license valid for HostIDs 50 to 99. Labels and attribute names match
// ignoring case, and HostId's lookup walks from the job's License port to
// its Cpu label, the machine's port, and the machine ad.
const (
	fig32Job = `[ Ports = {
	  [ Label = Cpu; MemoryReqs = 2.86041e+06; ImageSize = 1.34615e+07;
	    Constraint = cpu.Arch == "INTEL" && cpu.OpSys == "LINUX" && cpu.VirtualMemory > ImageSize ],
	  [ Label = License; HostId = cpu.Key; Constraint = License.App == "app1" ] } ]`
	fig32Machine = `[ Key = 90; OpSys = "LINUX"; VirtualMemory = 448619724.8; Memory = 838860800; Arch = "INTEL";
	  Type = "Machine"; Ports = { [ Label = Job; Constraint = Job.MemoryReqs < Memory - 15728640 ] } ]`
	fig32License = `[ Type = "License"; App = "app1";
	  Ports = { [ Label = Job; Constraint = Job.HostID >= 50 && Job.HostId < 100 ] } ]`
)

func TestFigure32Gang(t *testing.T) {
	job := mustParse(t, fig32Job)
	other := mustParse(t, `[ Key = 10; OpSys = "LINUX"; VirtualMemory = 448619724.8; Memory = 838860800; Arch = "INTEL";
	  Ports = { [ Label = Job; Constraint = Job.MemoryReqs < Memory - 15728640 ] } ]`)
	cands := []*classad.ClassAd{mustParse(t, fig32License), other, mustParse(t, fig32Machine)}
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			m := NewMatcher(cands, Options{Algorithm: alg})
			g, err := m.Marshal(job)
			if err != nil || g == nil {
				t.Fatalf("Marshal = %v, %v; want a gang", g, err)
			}
			// Machine 10 docks at Cpu first, but no license takes HostId 10:
			// the search backtracks to machine 90.
			want := []Member{
				{Owner: -1, Port: 0, Label: "Cpu", Candidate: 2, Ad: cands[2]},
				{Owner: -1, Port: 1, Label: "License", Candidate: 0, Ad: cands[0]},
			}
			if len(g.Members) != len(want) {
				t.Fatalf("members %+v, want %+v", g.Members, want)
			}
			for i := range want {
				if g.Members[i] != want[i] {
					t.Errorf("member %d = %+v, want %+v", i, g.Members[i], want[i])
				}
			}
			// Consumed, the members join no later gang; machine 10 still can.
			m.Consume(g)
			if m.Live(0) || m.Live(2) || !m.Live(1) {
				t.Errorf("after Consume: Live = %v %v %v, want false true false", m.Live(0), m.Live(1), m.Live(2))
			}
			if g, _ := m.Marshal(job); g != nil {
				t.Errorf("a second gang formed from consumed members: %+v", g.Members)
			}
		})
	}
}

// The evaluation environment itself: with the gang docked, HostId in the
// job's License port is the machine's Key, and each constraint is true.
func TestFigure32Environment(t *testing.T) {
	job, machine, license := mustParse(t, fig32Job), mustParse(t, fig32Machine), mustParse(t, fig32License)
	jp, _ := ParsePorts(job)
	mp, _ := ParsePorts(machine)
	lp, _ := ParsePorts(license)
	j, mc, l := newMember(job, jp, -1), newMember(machine, mp, 0), newMember(license, lp, 1)
	dock(j, 0, mc, 0)
	dock(j, 1, l, 0)
	var ev classad.Matcher
	if v := ev.EvalIn(&j.port[1], "HostId"); v.String() != "90" {
		t.Errorf("HostId = %v, want 90", v)
	}
	for _, c := range []struct {
		mb *member
		k  int
	}{{j, 0}, {j, 1}, {mc, 0}, {l, 0}} {
		if v := ev.EvalIn(&c.mb.port[c.k], "Constraint"); !v.IsTrue() {
			t.Errorf("%s port %d: Constraint = %v", c.mb.ad.Eval("Type"), c.k, v)
		}
	}
	// A label names the partner's port; selecting from it walks to the ad.
	if v := ev.EvalExprIn(&l.port[0], mustExpr(t, "Job.Cpu.Arch")); v.String() != `"INTEL"` {
		t.Errorf("Job.Cpu.Arch from the license = %v", v)
	}
	undock(j, 1, l, 0)
	if v := ev.EvalIn(&j.port[1], "HostId"); v.String() != "90" {
		t.Errorf("HostId after the license left = %v", v)
	}
	undock(j, 0, mc, 0)
	if v := ev.EvalIn(&j.port[1], "HostId"); !v.IsUndefined() {
		t.Errorf("HostId with Cpu empty = %v, want undefined", v)
	}
}

func mustExpr(t testing.TB, src string) classad.Expr {
	t.Helper()
	e, err := classad.ParseExpr(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Figure 8: two machines on one subnet. Host2's constraint reads Host1,
// a label in scope from its port on; Host1's cannot read Host2.
func TestFigure8SameSubnet(t *testing.T) {
	job := mustParse(t, `[ Owner = "raman"; Ports = {
	  [ Label = Host1; ImageSize = 100; Constraint = Host1.Arch == "INTEL" && Host1.VirtualMemory > ImageSize; Rank = Host1.MIPS ],
	  [ Label = Host2; ImageSize = 100; Constraint = Host2.Arch == "INTEL" && Host2.VirtualMemory > ImageSize && Host1.Subnet == Host2.Subnet; Rank = Host2.KFlops ] } ]`)
	machine := func(subnet string, mips, kflops int) string {
		return `[ Arch = "INTEL"; VirtualMemory = 1000; Subnet = "` + subnet + `"; MIPS = ` + itoa(mips) + `; KFlops = ` + itoa(kflops) + `;
		  Requirements = TARGET.ImageSize < VirtualMemory ]`
	}
	cands := []*classad.ClassAd{
		mustParse(t, machine("a", 100, 1)), // the best MIPS, alone on its subnet
		mustParse(t, machine("b", 50, 1)),
		mustParse(t, machine("b", 10, 7)),
		mustParse(t, machine("b", 60, 3)),
		mustParse(t, `[ Arch = "SPARC"; VirtualMemory = 1000; Subnet = "b"; MIPS = 999; KFlops = 999; Requirements = true ]`),
	}
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			g, err := NewMatcher(cands, Options{Algorithm: alg}).Marshal(job)
			if err != nil || g == nil {
				t.Fatalf("Marshal = %v, %v", g, err)
			}
			// Host1: the best-ranked machine with which a Host2 exists (60 on
			// b, since a has no partner); Host2: the best KFlops on b.
			if g.Members[0].Candidate != 3 || g.Members[1].Candidate != 2 {
				t.Errorf("gang %d, %d; want 3, 2", g.Members[0].Candidate, g.Members[1].Candidate)
			}
		})
	}
}

func itoa(i int) string { return classad.Int(int64(i)).String() }

// Ads without Ports match as classad.Match matches them.
func TestBilateralAsMatch(t *testing.T) {
	job := mustParse(t, `[ Owner = "alice"; RequestMemory = 512; ImageSize = 100;
	  Requirements = TARGET.Arch == "X86_64" && TARGET.Memory >= RequestMemory && Disk > 0; Rank = TARGET.Memory ]`)
	cands := []*classad.ClassAd{
		mustParse(t, `[ Arch = "X86_64"; Memory = 256; Disk = 10; Requirements = TARGET.Owner == "alice" ]`),
		mustParse(t, `[ Arch = "X86_64"; Memory = 1024; Disk = 10; Requirements = Owner == "bob" ]`),
		mustParse(t, `[ Arch = "X86_64"; Memory = 2048; Disk = 10; Requirements = TARGET.ImageSize < 1000 && Owner == "alice" ]`),
		mustParse(t, `[ Arch = "X86_64"; Memory = 4096; Requirements = 1 ]`),
		mustParse(t, `[ Arch = "X86_64"; Memory = 8192; Disk = 1; Requirements = 1 ]`),
	}
	for i, c := range cands {
		m := NewMatcher([]*classad.ClassAd{c}, Options{Algorithm: LR})
		g, err := m.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		if want := classad.Match(job, c); (g != nil) != want {
			t.Errorf("candidate %d: gang %v, classad.Match %v", i, g != nil, want)
		}
	}
	for _, alg := range algorithms {
		g, _ := NewMatcher(cands, Options{Algorithm: alg}).Marshal(job)
		if g == nil || g.Members[0].Candidate != 4 || g.Members[0].Label != "other" {
			t.Errorf("%v: gang %+v, want candidate 4 (best Rank) at port other", alg, g)
		}
	}
}

func TestParsePortsErrors(t *testing.T) {
	for _, src := range []string{
		`[ Ports = 3 ]`,
		`[ Ports = {} ]`,
		`[ Ports = { 1 } ]`,
		`[ Ports = { [ Constraint = true ] } ]`,
		`[ Ports = { [ Label = "cpu"; Constraint = true ] } ]`,
		`[ Ports = { [ Label = a.b; Constraint = true ] } ]`,
		`[ Ports = { [ Label = self; Constraint = true ] } ]`,
		`[ Ports = { [ Label = Cpu ] } ]`,
		`[ Ports = { [ Label = Cpu; Constraint = true ], [ Label = cpu; Constraint = true ] } ]`,
	} {
		ad := mustParse(t, src)
		_, err := ParsePorts(ad)
		var pe *PortsError
		if !errors.Is(err, ErrPorts) || !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a PortsError", src, err)
		}
		// As a request it is refused; as a candidate it takes no part.
		m := NewMatcher([]*classad.ClassAd{mustParse(t, `[ Requirements = true ]`), ad}, Options{})
		if _, err := m.Marshal(ad); !errors.Is(err, ErrPorts) {
			t.Errorf("%s: Marshal error %v", src, err)
		}
		if bad := m.Invalid(); len(bad) != 1 || bad[1] == nil || m.Live(1) {
			t.Errorf("%s: Invalid = %v, Live(1) = %v", src, bad, m.Live(1))
		}
	}
}

// Six machines wanted, five offered: every algorithm tries the 5!
// orders (the thesis's §5.9 example) unless the bound on tries stops it.
func TestTooHard(t *testing.T) {
	var cands []*classad.ClassAd
	for range 5 {
		cands = append(cands, mustParse(t, `[ Requirements = true ]`))
	}
	src := "[ Ports = { "
	for i := range 6 {
		if i > 0 {
			src += ", "
		}
		src += "[ Label = M" + itoa(i) + "; Requirements = true ]"
	}
	job := mustParse(t, src+" } ]")
	for _, alg := range algorithms {
		if g, err := NewMatcher(cands, Options{Algorithm: alg}).Marshal(job); g != nil || err != nil {
			t.Errorf("%v: %v, %v; want no gang", alg, g, err)
		}
		if _, err := NewMatcher(cands, Options{Algorithm: alg, MaxTries: 100}).Marshal(job); !errors.Is(err, ErrTooHard) {
			t.Errorf("%v with 100 tries: %v, want ErrTooHard", alg, err)
		}
	}
}

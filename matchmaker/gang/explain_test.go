package gang

import (
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

func TestExplain(t *testing.T) {
	job := mustParse(t, fig32Job)
	machine := mustParse(t, fig32Machine)
	farLicense := mustParse(t, `[ Type = "License"; App = "app1"; Ports = { [ Label = Job; Constraint = Job.HostID >= 0 && Job.HostId < 10 ] } ]`)
	otherApp := mustParse(t, `[ Type = "License"; App = "app2"; Ports = { [ Label = Job; Constraint = true ] } ]`)

	t.Run("license valid elsewhere", func(t *testing.T) {
		m := NewMatcher([]*classad.ClassAd{machine, farLicense, otherApp}, Options{Algorithm: DYN})
		before := m.Stats()
		x, err := m.Explain(job)
		if err != nil || x.Formed || len(x.Ports) != 2 {
			t.Fatalf("Explain = %+v, %v", x, err)
		}
		if m.Stats() != before {
			t.Error("Explain changed Stats")
		}
		cpu, lic := x.Ports[0], x.Ports[1]
		if cpu.Candidate != 0 || cpu.Stuck {
			t.Errorf("Cpu port %+v: want the machine docked", cpu)
		}
		// With the machine docked: the job's License port accepts the
		// app1 license, whose own constraint refuses HostId 90; the app2
		// license accepts the job but the job refuses it.
		if !lic.Stuck || lic.Candidate != -1 || lic.Candidates != 2 || lic.Admitted != 1 || lic.Admitting != 1 || lic.Compatible != 0 || lic.Conflict != "" {
			t.Errorf("License port %+v", lic)
		}
		if s := x.String(); !strings.Contains(s, "port 1 (License): no candidate docks here") {
			t.Errorf("String:\n%s", s)
		}
		// The candidates are as they were: the machine docks for a job
		// that needs no license.
		g, _ := m.Marshal(mustParse(t, `[ Ports = { [ Label = Cpu; MemoryReqs = 1; Constraint = Cpu.Key == 90 ] } ]`))
		if g == nil {
			t.Error("Explain left the machine taken")
		}
	})
	t.Run("no license at all", func(t *testing.T) {
		m := NewMatcher([]*classad.ClassAd{machine, otherApp}, Options{Algorithm: LR})
		x, _ := m.Explain(job)
		lic := x.Ports[1]
		if lic.Conflict != `License.App == "app1"` || lic.Conjuncts[0].Matches != 0 {
			t.Errorf("License port %+v, want the App conjunct as the conflict", lic)
		}
	})
	t.Run("forms", func(t *testing.T) {
		m := NewMatcher([]*classad.ClassAd{machine, mustParse(t, fig32License)}, Options{})
		if x, _ := m.Explain(job); !x.Formed {
			t.Errorf("Explain = %+v, want Formed", x)
		}
	})
}

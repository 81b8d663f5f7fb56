package matchmaker

import (
	"testing"

	"harrier.dev/harrier/classad"
)

func TestRefs(t *testing.T) {
	ad := mustParse(t, `[ Mem = 10; Limit = Mem * 2; Requirements = TARGET.Memory >= Limit && Arch == "X86_64" && my.Disk > 0 && size(other.Name) > 0 && [x = 1].x == 1 ]`)
	r := exprRefs(ad, "Requirements")
	for _, n := range []string{"memory", "arch", "name"} {
		if !r.external[n] {
			t.Errorf("external refs %v lack %s", r.external, n)
		}
	}
	for _, n := range []string{"limit", "mem", "disk", "requirements"} {
		if !r.internal[n] {
			t.Errorf("internal refs %v lack %s", r.internal, n)
		}
	}
	if r.external["size"] || r.external["target"] {
		t.Errorf("function or scope names taken for references: %v", r.external)
	}
}

func TestAnalyze(t *testing.T) {
	machines := []*classad.ClassAd{
		mustParse(t, machineText("slot1@a", StateUnclaimed, 1024, "")),
		mustParse(t, machineText("slot1@b", StateUnclaimed, 4096, "")),
		mustParse(t, machineText("slot1@c", StateUnclaimed, 8192, `Requirements = TARGET.Owner == "bob" && TARGET.RequestMemory <= MY.Memory`)),
		mustParse(t, machineText("slot1@d", StateClaimed, 8192, `RemoteOwner = "alice"`)),
		mustParse(t, machineText("slot1@e", StateClaimed, 8192, `RemoteOwner = "carol"`)),
	}
	job := mustParse(t, jobText(1, 0, "alice", `RequestMemory = 2048; Requirements = TARGET.Arch == "X86_64" && TARGET.Memory >= MY.RequestMemory`))
	a := Analyze(job, machines)
	if a.Machines != 5 || a.RejectedByJob != 1 || a.RejectedByMachine != 1 || a.RunningOwn != 1 || a.ServingOthers != 1 || a.Available != 1 {
		t.Errorf("analysis %+v", a)
	}
	if len(a.Conditions) != 2 || a.Conditions[0].Machines != 5 || a.Conditions[1].Machines != 4 || a.Blame() != 1 {
		t.Errorf("conditions %+v, blame %d", a.Conditions, a.Blame())
	}
	if len(a.MachineConditions) != 1 || a.MachineConditions[0].Text != `TARGET.Owner == "bob"` {
		t.Errorf("machine conditions %+v", a.MachineConditions)
	}
	job = mustParse(t, jobText(2, 0, "alice", `Requirements = TARGET.Arch == "SPARC" && TARGET.Memory >= 1`))
	if a := Analyze(job, machines); a.Blame() != 0 || a.Conditions[0].Machines != 0 || a.RejectedByJob != 5 {
		t.Errorf("SPARC job: %+v, blame %d", a, a.Blame())
	}
}

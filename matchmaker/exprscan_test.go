package matchmaker

import (
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

func TestConjuncts(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`((a == 1 && b == 2) && c > my.d)`, `a == 1|b == 2|c > my.d`},
		{`a && b || c`, `a && b || c`},
		{`(a || b) && !(c && d)`, `a || b|!(c && d)`},
		{`x ? y && z : w`, `x ? y && z : w`},
		{`strcmp("a && b", s) == 0 && {1, 2}[0] == 1`, `strcmp("a && b",s) == 0|{ 1,2 }[0] == 1`},
	} {
		e, err := classad.ParseExpr(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		text := e.String()
		var parts []string
		for _, c := range conjuncts(scanExpr(text)) {
			parts = append(parts, source(text, c))
		}
		if got := strings.Join(parts, "|"); got != tc.want {
			t.Errorf("conjuncts of %s (printed %s): %s, want %s", tc.expr, text, got, tc.want)
		}
	}
}

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

// FuzzConjuncts checks that every conjunct of a printed expression parses
// on its own, and that an expression that is true has no conjunct that is
// not: the negotiator relies on both to drop and index conjuncts.
func FuzzConjuncts(f *testing.F) {
	for _, s := range []string{
		`a && b`, `((x > 1 && y < 2) && z)`, `a ? b && c : d && e`, `"&&" && 'odd name' && x.y && (1 && 2)`,
		`LoadAvg <= 0.3 && KeyboardIdle > 15 * 60 && TARGET.RequestMemory <= MY.Memory`,
		`{ a && b, [c = 1 && 2] } && true`, `1e3 > .5 && 0x1f == 31 && -2 < +3`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := classad.ParseExpr(src)
		if err != nil {
			return
		}
		text := e.String()
		whole := classad.New().EvalExpr(e, nil)
		for _, c := range conjuncts(scanExpr(text)) {
			part := source(text, c)
			pe, err := classad.ParseExpr(part)
			if err != nil {
				t.Fatalf("conjunct %q of %q does not parse: %v", part, text, err)
			}
			if whole.IsTrue() && !truthy(classad.New().EvalExpr(pe, nil)) {
				t.Fatalf("%q is true but its conjunct %q is not", text, part)
			}
		}
	})
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

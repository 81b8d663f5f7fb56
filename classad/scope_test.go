package classad

import "testing"

// A port placed in its ad placed in a context sees the ad's attributes,
// then the context's labels; TARGET is the context's target, and a bare
// name found nowhere falls back to the target and its ad, not into the
// target's context.
func TestScopeContext(t *testing.T) {
	ad := mustParse(t, `[ Memory = 64; Ports = { [ Label = Cpu; Need = 10 ] } ]`)
	partner := mustParse(t, `[ Key = 90; Mips = 5 ]`)
	ports, _ := ad.Lookup("Ports")
	port, _ := ad.EvalExpr(ports, nil).ListValue()
	portAd, _ := port[0].ClassAdValue()

	x, px := NewContext(), NewContext()
	var adIn, portIn, partnerIn Scope
	adIn.PlaceIn(ad, x)
	portIn.Place(portAd, &adIn)
	partnerIn.PlaceIn(partner, px)
	px.Set("Secret", Literal(Int(7)))
	x.Set("Cpu", Literal(partnerIn.Value()))
	x.SetTarget(&partnerIn)

	var m Matcher
	for src, want := range map[string]string{
		"Need + Memory":      "74",
		"Cpu.Key":            "90",
		"cpu.mips":           "5",
		"TARGET.Key":         "90",
		"Mips":               "5",         // bare: falls back to the target
		"Secret":             "undefined", // not into the target's context
		"Cpu.Secret":         "7",         // but a selection walks the target's scopes
		"parent.Memory":      "64",
		"Label.Key":          "90", // Label = Cpu: the label names the partner
		"MY.Need":            "10",
		"isUndefined(other)": "false",
	} {
		e, err := ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.EvalExprIn(&portIn, e).String(); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
	if got := m.EvalIn(&portIn, "Memory").String(); got != "64" {
		t.Errorf("EvalIn Memory = %s", got)
	}
	x.Set("Cpu", Literal(Undefined()))
	x.SetTarget(nil)
	for _, src := range []string{"Cpu.Key", "TARGET.Key", "Mips"} {
		e, _ := ParseExpr(src)
		if v := m.EvalExprIn(&portIn, e); !v.IsUndefined() {
			t.Errorf("undocked %s = %v", src, v)
		}
	}
}

func mustParse(t *testing.T, src string) *ClassAd {
	t.Helper()
	ad, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

package gang

import (
	"errors"
	"testing"

	"harrier.dev/harrier/classad"
)

// FuzzPorts reads any ad as a request and as a candidate: bad Ports give
// a PortsError, never a panic, and the three algorithms form the same
// gang from it.
func FuzzPorts(f *testing.F) {
	for _, s := range []string{
		fig32Job, fig32Machine, fig32License,
		`[ Ports = { [ Label = Host1; Constraint = Host1.Arch == "INTEL"; Rank = Host1.MIPS ], [ Label = Host2; Constraint = Host1.Subnet == Host2.Subnet ] } ]`,
		`[ Requirements = TARGET.Key > 3; Key = 4 ]`,
		`[ Ports = { [ Label = a; Requirements = a.x > b ], [ Label = b; K = a.Key + 1; Requirements = TARGET.HostID == K ] } ]`,
		`[ Ports = { [ Label = J; Requirements = J.HostId >= 0 ], [ Label = Sub; Requirements = Sub.Key < 100 ] } ]`,
		`[ Ports = 3 ]`, `[ Ports = {} ]`, `[ Ports = { [ Label = self; Constraint = true ] } ]`,
		`[ Ports = { [ Label = X; Constraint = X.y ], [ Label = x; Constraint = true ] } ]`,
	} {
		f.Add(s)
	}
	pool := []*classad.ClassAd{}
	for _, s := range []string{fig32Machine, fig32License, `[ Key = 3; Arch = "INTEL"; Requirements = true ]`,
		`[ App = "app1"; Ports = { [ Label = J; Requirements = J.HostId < 50 ], [ Label = Sub; Requirements = Sub.Key > 0 ] } ]`} {
		ad, err := classad.Parse(s)
		if err != nil {
			f.Fatal(err)
		}
		pool = append(pool, ad)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ad, err := classad.Parse(src)
		if err != nil {
			return
		}
		if _, err := ParsePorts(ad); err != nil {
			var pe *PortsError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a PortsError", err, err)
			}
		}
		cands := append([]*classad.ClassAd{ad}, pool...)
		var first string
		for i, alg := range algorithms {
			m := NewMatcher(cands, Options{Algorithm: alg})
			g, err := m.Marshal(ad)
			if err != nil {
				var pe *PortsError
				if !errors.As(err, &pe) {
					t.Fatalf("Marshal error %T %v", err, err)
				}
				return
			}
			if i == 0 {
				first = gangKey(g)
			} else if k := gangKey(g); k != first {
				t.Fatalf("%v forms %s, naive %s", alg, k, first)
			}
			if _, err := m.Explain(ad); err != nil {
				t.Fatal(err)
			}
		}
	})
}

package classad

import (
	"os"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, tc := range evalCases {
		f.Add(tc.expr)
	}
	f.Add(roundTripAd)
	f.Add(evalScope)
	for _, name := range []string{"figure12-job.ad", "figure12-machine.ad", "attr100.ad"} {
		src, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
}

// FuzzParseExpr checks that any input either fails to parse or prints in a
// form that parses back to the same text, and that evaluating it, alone or
// against the Figure 12 machine, neither panics nor hangs.
func FuzzParseExpr(f *testing.F) {
	addSeeds(f)
	scope, err := Parse(evalScope)
	if err != nil {
		f.Fatal(err)
	}
	_, machine := readAd(f, "figure12-machine.ad")
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseExpr(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			return
		}
		printed := e.String()
		e2, err := ParseExpr(printed)
		if err != nil {
			t.Fatalf("printed form %q does not parse: %v", printed, err)
		}
		if again := e2.String(); again != printed {
			t.Fatalf("printing is not stable: %q then %q", printed, again)
		}
		v := scope.EvalExpr(e, machine)
		_ = v.String()
		ad := scope.Copy()
		ad.Set("Requirements", e)
		Match(ad, machine)
	})
}

// FuzzParse checks whole ads in new, old and JSON syntax.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		if ad, err := ParseOld(src); err == nil {
			_ = ad.MarshalOld()
		}
		ad, err := Parse(src)
		if err != nil {
			return
		}
		printed := ad.String()
		ad2, err := Parse(printed)
		if err != nil {
			t.Fatalf("printed form %q does not parse: %v", printed, err)
		}
		if again := ad2.String(); again != printed {
			t.Fatalf("printing is not stable: %q then %q", printed, again)
		}
		js, err := ad.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		ad3 := New()
		if err := ad3.UnmarshalJSON(js); err != nil {
			t.Fatalf("UnmarshalJSON of %s: %v", js, err)
		}
		for _, name := range ad.Names() {
			ad.Eval(name)
		}
	})
}

// FuzzUnmarshalJSON feeds arbitrary bytes to the JSON reader.
func FuzzUnmarshalJSON(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":"\/Expr(a + 1)\/","c":[1,{"d":null}],"e":2.5,"f":true}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"a":"\/Expr(\/"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ad := New()
		if err := ad.UnmarshalJSON(data); err != nil {
			return
		}
		if _, err := ad.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
		_ = ad.String()
	})
}

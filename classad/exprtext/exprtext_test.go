package exprtext

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
		for _, c := range Conjuncts(Scan(text)) {
			parts = append(parts, Source(text, c))
		}
		if got := strings.Join(parts, "|"); got != tc.want {
			t.Errorf("conjuncts of %s (printed %s): %s, want %s", tc.expr, text, got, tc.want)
		}
	}
}

// FuzzConjuncts checks that every conjunct of a printed expression parses
// on its own, and that an expression that is true has no conjunct that is
// not: the matchmaker relies on both to drop and index conjuncts.
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
		for _, c := range Conjuncts(Scan(text)) {
			part := Source(text, c)
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

// truthy is a value a Requirements conjunct accepts: true, or a non-zero
// number, as the matchmaker reads it.
func truthy(v classad.Value) bool {
	if v.IsTrue() {
		return true
	}
	f, ok := v.RealValue()
	return ok && v.Kind() != classad.BoolKind && f != 0
}

package classad

import (
	"strings"
	"testing"
)

// evalCases pairs an expression with its value, printed, for what
// libclassad does not have and so testdata/oracle cannot hold: the
// functions HTCondor's daemons add, and MY and TARGET outside a match.
// They are evaluated in the ad evalScope, with no target.
var evalCases = []struct{ expr, want string }{
	{`MY.x`, `1`}, {`TARGET.x`, `undefined`},
	{`split("a b,c")`, `{ "a","b","c" }`}, {`split("a:b::c", ":")`, `{ "a","b","c" }`},
	{`splitUserName("jo@example.org")`, `{ "jo","example.org" }`}, {`splitSlotName("slot1@host")`, `{ "slot1","host" }`},
	{`splitSlotName("host")`, `{ "","host" }`}, {`splitUserName("jo")`, `{ "jo","" }`}, {`splitUserName(1)`, `error`},
	{`sprintf("%d-%s-%.2f-%5.1e-%x-%%", 42, "s", 2.5, 1000.0, 255)`, `"42-s-2.50-1.0e+03-ff-%"`},
	{`sprintf("%s", {1})`, `"{ 1 }"`}, {`sprintf("%d")`, `error`}, {`sprintf("%03d", 7)`, `"007"`},
	{`stringListSize("a, b ,c")`, `3`}, {`stringListSize("a;b", ";")`, `2`}, {`stringListSum("1,2,3")`, `6`},
	{`stringListSum("1,2.5")`, `3.500000000000000E+00`}, {`stringListAvg("1,2")`, `1.500000000000000E+00`},
	{`stringListMin("3,1,2")`, `1`}, {`stringListMax("3,1,2")`, `3`}, {`stringListMin("")`, `undefined`},
	{`stringListSum("a")`, `error`}, {`stringListMember("b", "a,b,c")`, `true`}, {`stringListMember("B", "a,b,c")`, `false`},
	{`stringListIMember("B", "a,b,c")`, `true`}, {`stringListSubsetMatch("a,b", "b,c,a")`, `true`},
	{`stringListSubsetMatch("a,x", "b,c,a")`, `false`}, {`stringListISubsetMatch("A,b", "b,c,a")`, `true`},
	{`stringListRegexpMember("^x", "ab,xy")`, `true`}, {`stringListRegexpMember("^z", "ab,xy")`, `false`},
	{`stringListRegexpMember("^X", "ab,xy", ",", "i")`, `true`},
	{`evalInEachContext(a * 2, {[a = 1], [a = 2], 3})`, `{ 2,4,error }`}, {`evalInEachContext(a, u)`, `undefined`},
	{`countMatches(a > 1, {[a = 1], [a = 2], [a = 3]})`, `2`}, {`countMatches(a, 1)`, `error`},
	{`random(1)`, `0`}, {`random(0)`, `error`}, {`isReal(random())`, `true`}, {`random(2.0) < 2.0`, `true`},
	{`random("a")`, `error`}, {`isAbsTime(absTime())`, `true`},
}

const evalScope = `[ x = 1; y = 2.5; s = "abc"; u = undefined; l = { 1,2,3 };
	n = [ a = 1; b = a + 1; nested = [ deep = 3 ] ]; z = x + 1;
	cyc = cyc2 + 1; cyc2 = cyc; selfeval = eval("selfeval") ]`

func TestEval(t *testing.T) {
	ad, err := Parse(evalScope)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range evalCases {
		e, err := ParseExpr(tc.expr)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.expr, err)
			continue
		}
		if got := ad.EvalExpr(e, nil).String(); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
		// Every expression prints in a form that parses back to the same text.
		printed := e.String()
		e2, err := ParseExpr(printed)
		if err != nil {
			t.Errorf("reparse %q (from %q): %v", printed, tc.expr, err)
		} else if e2.String() != printed {
			t.Errorf("round trip of %q: %q then %q", tc.expr, printed, e2.String())
		}
	}
}

// TestThreeValuedTables checks every operator against undefined and error
// on either side.
func TestThreeValuedTables(t *testing.T) {
	strictOps := []string{"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "<<", ">>", ">>>"}
	for _, o := range strictOps {
		for _, tc := range []struct{ l, r, want string }{
			{"undefined", "1", "undefined"}, {"1", "undefined", "undefined"},
			{"error", "1", "error"}, {"1", "error", "error"},
			{"undefined", "error", "error"}, {"error", "undefined", "error"},
		} {
			src := tc.l + " " + o + " " + tc.r
			if got := mustEval(t, src); got != tc.want {
				t.Errorf("%s = %s, want %s", src, got, tc.want)
			}
		}
	}
	for _, o := range []string{"=?=", "is"} {
		for _, tc := range []struct{ l, r, want string }{
			{"undefined", "undefined", "true"}, {"error", "error", "true"}, {"undefined", "error", "false"},
			{"1", "undefined", "false"}, {"error", "1", "false"},
		} {
			src := tc.l + " " + o + " " + tc.r
			if got := mustEval(t, src); got != tc.want {
				t.Errorf("%s = %s, want %s", src, got, tc.want)
			}
		}
	}
	// The full && and || tables, rows left operand, columns right: F T U E.
	vals := []string{"false", "true", "undefined", "error"}
	and := [4][4]string{
		{"false", "false", "false", "false"},
		{"false", "true", "undefined", "error"},
		{"false", "undefined", "undefined", "error"},
		{"error", "error", "error", "error"},
	}
	or := [4][4]string{
		{"false", "true", "undefined", "error"},
		{"true", "true", "true", "true"},
		{"undefined", "true", "undefined", "error"},
		{"error", "error", "error", "error"},
	}
	for i, l := range vals {
		for j, r := range vals {
			if got := mustEval(t, l+" && "+r); got != and[i][j] {
				t.Errorf("%s && %s = %s, want %s", l, r, got, and[i][j])
			}
			if got := mustEval(t, l+" || "+r); got != or[i][j] {
				t.Errorf("%s || %s = %s, want %s", l, r, got, or[i][j])
			}
		}
	}
	for _, o := range []string{"-", "+", "~"} {
		for _, v := range []string{"undefined", "error"} {
			if got := mustEval(t, o+v); got != v {
				t.Errorf("%s%s = %s, want %s", o, v, got, v)
			}
		}
	}
}

func mustEval(t *testing.T, src string) string {
	t.Helper()
	e, err := ParseExpr(src)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", src, err)
	}
	return New().EvalExpr(e, nil).String()
}

func TestEvalBoundsHostileAds(t *testing.T) {
	// Each attribute doubles the work of the next: 2^60 evaluations if
	// nothing stopped it.
	var b strings.Builder
	b.WriteString("[ a0 = 1")
	for i := 1; i <= 60; i++ {
		b.WriteString("; a" + itoa(i) + " = a" + itoa(i-1) + " + a" + itoa(i-1))
	}
	b.WriteString(" ]")
	ad, err := Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := ad.Eval("a60"); !got.IsError() {
		t.Errorf("a60 = %v, want error", got)
	}
	if got := ad.Eval("a10"); got.String() != "1024" {
		t.Errorf("a10 = %v, want 1024", got)
	}
	// A doubling string is cut off, not built.
	ad, err = Parse(`[ s0 = "xxxxxxxxxxxxxxxx"; s = strcat(s0, s0) ]`)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		ad.SetExpr("s"+itoa(i), "strcat(s"+itoa(i-1)+", s"+itoa(i-1)+")")
	}
	if got := ad.Eval("s40"); !got.IsError() {
		t.Errorf("s40 is %v, want error", got.Kind())
	}
}

func itoa(i int) string { return Int(int64(i)).String() }

package classad

import (
	"math"
	"testing"
)

// moreEvalCases cover time formats, conversions and identity of aggregates.
var moreEvalCases = []struct{ expr, want string }{
	{`formatTime(absTime("2021-03-04T15:06:07+01:00"), "%A %B %e %I%p %y %D %T %R %F %u %w %s %z %n%t%c %x %X %Q")`,
		`"Thursday March  4 03PM 21 03/04/21 15:06:07 15:06 2021-03-04 4 4 1614866767 +0100 \n\tThu Mar  4 15:06:07 2021 03/04/21 15:06:07 %Q"`},
	{`formatTime(0, 5)`, `error`}, {`formatTime("x")`, `error`},
	{`relTime(90) - relTime(30)`, `relTime("00:01:00")`}, {`relTime(90) / 2`, `relTime("00:00:45")`},
	{`2 * relTime(30)`, `relTime("00:01:00")`}, {`relTime(30) / 0`, `error`},
	{`absTime(100, 0) - relTime(40)`, `absTime("1970-01-01T00:01:00+00:00")`},
	{`relTime(40) + absTime(100, 0)`, `absTime("1970-01-01T00:02:20+00:00")`}, {`-relTime(5)`, `relTime("-00:00:05")`},
	{`relTime(1.5)`, `relTime("00:00:01.500")`}, {`relTime("1:30.5")`, `relTime("00:01:30.500")`}, {`relTime(true)`, `error`},
	{`absTime("2021-03-04T00:00:00Z")`, `absTime("2021-03-04T00:00:00+00:00")`}, {`absTime("garbage")`, `error`},
	{`absTime(0, "x")`, `error`}, {`isAbsTime(absTime())`, `true`}, {`isAbsTime(absTime(absTime(5, 0)))`, `true`},
	{`real(absTime(5, 0))`, `5.0`}, {`real(relTime(5))`, `5.0`}, {`real(true)`, `1.0`}, {`real({1})`, `error`}, {`real("x")`, `error`},
	{`bool(0.5)`, `true`}, {`bool(" false ")`, `false`}, {`bool({})`, `error`}, {`int({})`, `error`}, {`int(real("INF"))`, `error`},
	{`[a = 1] is [a = 1]`, `true`}, {`[a = 1] =?= [a = 2]`, `false`}, {`[a = 1] =?= [b = 1]`, `false`},
	{`[a = 1] is [a = 1; b = 2]`, `false`}, {`1.5 is 1.5`, `true`}, {`real("NaN") is real("NaN")`, `true`},
	{`relTime(1) is relTime(1)`, `true`}, {`absTime(1, 0) is absTime(1, 0)`, `true`}, {`{1, {2}} is {1, {2}}`, `true`},
	{`{1} is {1, 2}`, `false`}, {`"a\tb\x"`, `"a\tbx"`}, {`"\001\r\f\v\a\b"`, `"\001\r\f\v\a\b"`},
	{`splitTime(5).Type`, `"AbsoluteTime"`}, {`formatTime(86400, "%j")`, `"002"`},
	{`stringListSubsetMatch("a,x", "b,c,a")`, `false`}, {`stringListRegexpMember("^z", "ab,xy")`, `false`},
	{`stringListRegexpMember("^X", "ab,xy", ",", "i")`, `true`}, {`version_in_range("1", "2", "3")`, `false`},
	{`versionGT(1, "2")`, `error`}, {`regexp("a", 1)`, `error`}, {`regexpMember("a", {"b", 1})`, `error`},
	{`regexpMember("a", {"b", undefined})`, `undefined`}, {`regexpMember("a", "b")`, `error`},
	{`toUpper(1)`, `"1"`}, {`splitUserName("jo")`, `{ "jo","" }`}, {`splitUserName(1)`, `error`},
	{`random(2.0) < 2.0`, `true`}, {`random("a")`, `error`}, {`1.0 != 2`, `true`}, {`2.5 >= 2.5`, `true`},
	{`evalInEachContext(a * 2, {[a = 1], [a = 2], 3})`, `{ 2,4,error }`}, {`evalInEachContext(a, u)`, `undefined`},
	{`countMatches(a > 1, {[a = 1], [a = 2], [a = 3]})`, `2`}, {`countMatches(a, 1)`, `error`},
	{`1 < "a"`, `error`}, {`"a" <= "B"`, `true`}, {`"b" >= "B"`, `true`},
}

func TestEvalMore(t *testing.T) {
	ad, err := Parse(evalScope)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range moreEvalCases {
		e, err := ParseExpr(tc.expr)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.expr, err)
			continue
		}
		if got := ad.EvalExpr(e, nil).String(); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}

func TestValueKinds(t *testing.T) {
	if sec, off, ok := AbsTime(5, 3600).AbsTimeValue(); !ok || sec != 5 || off != 3600 {
		t.Error("AbsTimeValue")
	}
	if sec, ok := RelTime(2.5).RelTimeValue(); !ok || sec != 2.5 {
		t.Error("RelTimeValue")
	}
	if _, ok := Int(1).RelTimeValue(); ok {
		t.Error("Int.RelTimeValue")
	}
	if IntKind.String() != "integer" || AdKind.String() != "classad" || Kind(99).String() != "kind(99)" {
		t.Error("Kind.String")
	}
	if got := Literal(Real(math.Inf(1))).String(); got != `real("INF")` {
		t.Errorf("Inf prints as %s", got)
	}
	var zero Expr
	if !zero.IsZero() || zero.String() != "undefined" || !New().EvalExpr(zero, nil).IsUndefined() {
		t.Error("zero Expr")
	}
	if v, ok := Literal(Int(4)).AsLiteral(); !ok || v.String() != "4" {
		t.Error("AsLiteral")
	}
	if e, _ := ParseExpr("1 + x"); func() bool { _, ok := e.AsLiteral(); return ok }() {
		t.Error("AsLiteral of an expression")
	}
	// Values that JSON cannot hold travel as expressions.
	special := New()
	special.SetReal("inf", math.Inf(-1))
	special.SetValue("list", List(Int(1), Error(), RelTime(3)))
	special.SetValue("t", AbsTime(0, 0))
	js, err := special.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back := New()
	if err := back.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	if back.String() != special.String() {
		t.Errorf("JSON of special values: %s gives %s", js, back)
	}
}

package classad

import (
	"math"
	"testing"
)

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

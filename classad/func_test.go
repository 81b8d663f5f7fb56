package classad

import "testing"

// A function a context adds is seen by what is evaluated in that context,
// nested records too, and nowhere else; a builtin keeps its name; and
// EvalBound evaluates an attribute with one more name bound around it.
func TestContextFunc(t *testing.T) {
	ad := mustParse(t, `[ Base = 10; F = x * 2 + Base; Sum = twice(3); Nested = [ Y = twice(4) ]; Mapped = mapF(5); Size = size({1, 2}) ]`)
	x := NewContext()
	var in Scope
	in.PlaceIn(ad, x)
	x.SetFunc("Twice", func(k Call) Value {
		if k.Len() != 1 {
			return Error()
		}
		i, ok := k.Arg(0).IntValue()
		if !ok {
			return Error()
		}
		return Int(2 * i)
	})
	x.SetFunc("mapF", func(k Call) Value { return k.EvalBound("F", "x", k.Arg(0)) })
	x.SetFunc("size", func(Call) Value { return Int(-1) })

	var m Matcher
	for attr, want := range map[string]string{
		"Sum":    "6",
		"Mapped": "20", // x bound to 5, Base found where F is defined
		"F":      "undefined",
		"Size":   "2", // the builtin wins
	} {
		if got := m.EvalIn(&in, attr).String(); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
	e, _ := ParseExpr("Nested.Y")
	if got := m.EvalExprIn(&in, e).String(); got != "8" {
		t.Errorf("Nested.Y = %s, want 8", got)
	}
	if v := ad.Eval("Sum"); !v.IsError() {
		t.Errorf("outside the context twice(3) = %v, want error", v)
	}
}

// ListOf shares its slice: a list grown by appending keeps the earlier
// values' contents.
func TestListOf(t *testing.T) {
	vs := make([]Value, 0, 4)
	vs = append(vs, Int(1))
	one := ListOf(vs)
	vs = append(vs, Int(2))
	two := ListOf(vs)
	if one.String() != "{ 1 }" || two.String() != "{ 1,2 }" {
		t.Errorf("lists %s and %s", one, two)
	}
}

// A context may let relative times and numbers mix, as PluS's policies
// need; elsewhere the mix stays an error.
func TestRelTimesAsNumbers(t *testing.T) {
	ad := mustParse(t, `[ Start = absTime(1000); Prev = absTime(5000) - Start; Lt = Prev <= relTime("2:00:00"); Later = Start + relTime("1:00:00"); Diff = Prev - 1000 ]`)
	x := NewContext()
	var in Scope
	in.PlaceIn(ad, x)
	var m Matcher
	for _, attr := range []string{"Lt", "Later", "Diff"} {
		if v := m.EvalIn(&in, attr); !v.IsError() {
			t.Errorf("by default %s = %v, want error", attr, v)
		}
	}
	x.SetRelTimesAsNumbers(true)
	for attr, want := range map[string]string{
		"Lt":    "true",
		"Later": `absTime("1970-01-01T01:16:40-00:00")`,
		"Diff":  "3.000000000000000E+03",
	} {
		if got := m.EvalIn(&in, attr).String(); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
}

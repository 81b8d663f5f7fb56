package classad

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestClassAdAttributes(t *testing.T) {
	ad := New()
	ad.SetInt("Memory", 2048)
	ad.SetString("Owner", "jo")
	ad.SetReal("LoadAvg", 0.25)
	ad.SetBool("Idle", true)
	if err := ad.SetExpr("Twice", "memory * 2"); err != nil {
		t.Fatal(err)
	}
	if err := ad.SetExpr("Bad", "1 +"); err == nil {
		t.Error("SetExpr accepted 1 +")
	}
	ad.SetInt("MEMORY", 4096) // replaces, keeps spelling and place
	if got := strings.Join(ad.Names(), ","); got != "Memory,Owner,LoadAvg,Idle,Twice" {
		t.Errorf("Names = %s", got)
	}
	if v, ok := ad.EvalInt("twice"); !ok || v != 8192 {
		t.Errorf("Twice = %v %v", v, ok)
	}
	if s, ok := ad.EvalString("OWNER"); !ok || s != "jo" {
		t.Errorf("Owner = %q %v", s, ok)
	}
	if f, ok := ad.EvalReal("LoadAvg"); !ok || f != 0.25 {
		t.Errorf("LoadAvg = %v %v", f, ok)
	}
	if b, ok := ad.EvalBool("Idle"); !ok || !b {
		t.Errorf("Idle = %v %v", b, ok)
	}
	if _, ok := ad.EvalString("Memory"); ok {
		t.Error("EvalString accepted an integer")
	}
	if _, ok := ad.Lookup("nope"); ok {
		t.Error("Lookup found a missing attribute")
	}
	if !ad.Eval("nope").IsUndefined() {
		t.Error("missing attribute is not undefined")
	}

	c := ad.Copy()
	c.SetInt("Memory", 1)
	c.Delete("owner")
	if v, _ := ad.EvalInt("Memory"); v != 4096 {
		t.Errorf("Set on a copy changed the original: %d", v)
	}
	if _, ok := ad.Lookup("Owner"); !ok {
		t.Error("Delete on a copy changed the original")
	}
	if c.Len() != 4 || ad.Len() != 5 {
		t.Errorf("Len: copy %d, original %d", c.Len(), ad.Len())
	}
	if _, ok := c.Lookup("Idle"); !ok {
		t.Error("Delete lost other attributes")
	}

	u := New()
	u.SetInt("Memory", 7)
	u.SetString("Extra", "e")
	ad.Update(u)
	if v, _ := ad.EvalInt("Memory"); v != 7 {
		t.Errorf("Update did not replace Memory: %d", v)
	}
	if s, _ := ad.EvalString("Extra"); s != "e" {
		t.Error("Update did not add Extra")
	}

	// Many attributes exercise the index growing and Delete rebuilding it.
	big := New()
	for i := range 1000 {
		big.SetInt("a"+itoa(i), int64(i))
	}
	for i := 0; i < 1000; i += 2 {
		big.Delete("A" + itoa(i))
	}
	for i := range 1000 {
		v, ok := big.EvalInt("a" + itoa(i))
		if ok != (i%2 == 1) || ok && v != int64(i) {
			t.Fatalf("a%d = %v %v", i, v, ok)
		}
	}

	var zero ClassAd // the zero ClassAd is usable
	zero.SetInt("x", 1)
	if v, _ := zero.EvalInt("x"); v != 1 {
		t.Error("zero ClassAd")
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"1 +", "line 1, column 4: expected expression, found end of input"},
		{"(1", "line 1, column 3: expected ')' to close parenthesis, found end of input"},
		{"1 2", "line 1, column 3: expected operator or end of input, found number"},
		{"a ? b", "line 1, column 6: expected ':' in conditional expression"},
		{"\"abc", "line 1, column 1: unterminated string"},
		{"1\n  @", "line 2, column 3: unexpected character '@'"},
		{"f(1,", "line 1, column 5: expected expression"},
		{"12abc", "malformed number"},
		{"a.", "expected attribute name after '.'"},
		{"{1, 2", "expected '}' to close list"},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "nesting deeper than"},
		{strings.Repeat("-", 300) + "1", "nesting deeper than"},
		{strings.Repeat("[a=", 300) + "1" + strings.Repeat("]", 300), "nesting deeper than"},
		{"/* open", "unterminated comment"},
		{"1" + strings.Repeat(" + 1", 20000), "expression deeper than"},
		{"x" + strings.Repeat(".a", 20000), "expression deeper than"},
		{"x" + strings.Repeat("[0]", 20000), "expression deeper than"},
	} {
		_, err := ParseExpr(tc.src)
		if err == nil {
			t.Errorf("ParseExpr(%.20q) succeeded", tc.src)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseExpr(%.20q): %T is not a *SyntaxError", tc.src, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseExpr(%.20q) = %q, want %q", tc.src, err, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"a = 1", "expected '[' to start a ClassAd"},
		{"[ a = 1; b ]", "line 1, column 12: expected '=' after attribute name, found ']'"},
		{"[ a = 1 ] x", "expected end of input after ClassAd"},
		{"[ true = 1 ]", "reserved word"},
		{"[ a = 1 + ]", "expected expression, found ']'"},
		{"[ a = 1, b = 2 ]", "expected ';' or ']' after attribute a, found ','"},
	} {
		if _, err := Parse(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.src, err, tc.want)
		}
	}
	// Long but shallow chains are fine.
	long, err := ParseExpr(`"m0" == x` + strings.Repeat(` || "m1" == x`, 5000))
	if err != nil {
		t.Fatalf("5001-clause disjunction: %v", err)
	}
	ad := New()
	ad.SetString("x", "M1")
	if !ad.EvalExpr(long, nil).IsTrue() {
		t.Error("5001-clause disjunction is not true")
	}
	_, err = ParseOld("A = 1\n\nB = (2\n")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(se.Msg, "expected ')'") {
		t.Errorf("ParseOld error = %v", err)
	}
	if _, err := ParseOld("= 3\n"); err == nil {
		t.Error("ParseOld accepted a line without a name")
	}
}

const roundTripAd = `[ MyType = "Job"; Requirements = (other.Arch == "INTEL" && other.OpSys == "LINUX") && other.Disk > my.DiskUsage; ` +
	`Rank = (Memory * 10000) + KFlops; Path = "C:\\temp\\x"; Quote = "say \"hi\""; Real = 5.000000000000000E-01; Big = 1.000000000000000E+30; Neg = -3; ` +
	`List = { 1,"two",3.000000000000000E+00,{ 4 } }; Nested = [ a = 1; b = 'parent'.Real ]; Cond = x ?: y ? 1 : 2; Idx = List[1]; ` +
	`Time = absTime("2020-01-02T03:04:05-00:00"); Dur = relTime("1+00:00:00"); U = undefined; E = error; B = true; ` +
	`Call = strcat("a",toUpper("b")); 'odd name' = 1; Sel = TARGET.'odd name'; Meta = a is b && c isnt d && e is f && g isnt h; ` +
	`Bits =  ~1 & 2 | 3 ^ 4 << 1 >> 1 >>> 1; Root = .x; Unary =  ! - +x ]`

func TestRoundTrips(t *testing.T) {
	ad, err := Parse(roundTripAd)
	if err != nil {
		t.Fatal(err)
	}
	if got := ad.String(); got != roundTripAd {
		t.Errorf("new syntax:\n got %s\nwant %s", got, roundTripAd)
	}

	old := ad.MarshalOld()
	if !strings.Contains(old, "Path = \"C:\\temp\\x\"\n") || !strings.Contains(old, `Quote = "say \"hi\""`) {
		t.Errorf("old syntax quoting:\n%s", old)
	}
	fromOld, err := ParseOld("# a comment\n\n" + old)
	if err != nil {
		t.Fatalf("ParseOld: %v\n%s", err, old)
	}
	if got := fromOld.String(); got != roundTripAd {
		t.Errorf("old syntax round trip:\n got %s\nwant %s", got, roundTripAd)
	}

	js, err := ad.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"Requirements":"\/Expr((other.Arch == \"INTEL\" && other.OpSys == \"LINUX\") && other.Disk > my.DiskUsage)\/"`) ||
		!strings.Contains(string(js), `"Real":0.5`) || !strings.Contains(string(js), `"U":null`) ||
		!strings.Contains(string(js), `"List":[1,"two",3.0,[4]]`) || !strings.Contains(string(js), `"Nested":{"a":1,"b":"\/Expr('parent'.Real)\/"}`) {
		t.Errorf("JSON form: %s", js)
	}
	fromJSON := New()
	if err := json.Unmarshal(js, fromJSON); err != nil {
		t.Fatalf("UnmarshalJSON: %v\n%s", err, js)
	}
	if got := fromJSON.String(); got != roundTripAd {
		t.Errorf("JSON round trip:\n got %s\nwant %s", got, roundTripAd)
	}
	// Key order of nested objects survives too.
	nested := New()
	if err := nested.UnmarshalJSON([]byte(`{"n":{"z":1,"a":2}}`)); err != nil {
		t.Fatal(err)
	}
	if got := nested.String(); got != "[ n = [ z = 1; a = 2 ] ]" {
		t.Errorf("nested JSON order: %s", got)
	}
	for _, bad := range []string{`[1]`, `{"a":}`, `{"a":"\/Expr(1 +)\/"}`, `{"a":1e999}`} {
		if err := New().UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded", bad)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	if v, ok := Int(3).RealValue(); !ok || v != 3 {
		t.Error("Int.RealValue")
	}
	if v, ok := Real(-2.7).IntValue(); !ok || v != -2 {
		t.Error("Real.IntValue truncates toward zero")
	}
	if _, ok := String("3").IntValue(); ok {
		t.Error("String.IntValue")
	}
	if !Bool(true).IsTrue() || Int(1).IsTrue() || Bool(false).IsTrue() {
		t.Error("IsTrue")
	}
	if l, ok := List(Int(1), String("a")).ListValue(); !ok || len(l) != 2 || l[1].String() != `"a"` {
		t.Error("ListValue")
	}
	if Undefined().Kind() != UndefinedKind || Error().Kind() != ErrorKind || (Value{}).Kind() != UndefinedKind {
		t.Error("Kind")
	}
	inner := New()
	inner.SetInt("a", 1)
	v := AdValue(inner)
	if got := v.String(); got != "[ a = 1 ]" {
		t.Errorf("AdValue prints %s", got)
	}
	if ad, ok := v.ClassAdValue(); !ok || ad != inner {
		t.Error("ClassAdValue")
	}
	if got := Real(1e300).String(); got != "1.000000000000000E+300" {
		t.Errorf("Real(1e300) = %s", got)
	}
	if got := Real(2).String(); got != "2.000000000000000E+00" {
		t.Errorf("Real(2) = %s", got)
	}
	if got := Literal(String("x")).String(); got != `"x"` {
		t.Errorf("Literal = %s", got)
	}
}

// figure12 ads from testdata are shared with the benchmarks.
func TestFigure12(t *testing.T) {
	job, machine := figure12(t)
	if !Match(job, machine) || !Match(machine, job) {
		t.Fatal("Figure 12 ads do not match")
	}
	if got := Rank(job, machine); got != 2048*10000+100000 {
		t.Errorf("job rank = %v", got)
	}
	// The machine's Rank compares other.Department with its own, which it
	// lacks: undefined, so 0.
	if got := Rank(machine, job); got != 0 {
		t.Errorf("machine rank = %v", got)
	}
	machine.SetString("Department", "compsci")
	if got := Rank(machine, job); got != 1 {
		t.Errorf("machine rank with a department = %v", got)
	}
	busy := machine.Copy()
	busy.SetReal("LoadAvg", 0.5)
	if Match(job, busy) {
		t.Error("matched a busy machine")
	}
	small := machine.Copy()
	small.SetInt("Disk", 10)
	if Match(job, small) {
		t.Error("matched a machine with too little disk")
	}
	sun := machine.Copy()
	sun.SetString("OpSys", "SOLARIS")
	if Match(job, sun) {
		t.Error("matched a Solaris machine")
	}
	m := NewMatcher()
	if !m.Match(job, machine) || m.Rank(job, machine) != Rank(job, machine) {
		t.Error("Matcher disagrees with Match and Rank")
	}
	if got := m.EvalAttr(job, machine, "Requirements"); !got.IsTrue() {
		t.Errorf("EvalAttr = %v", got)
	}
}

// TestThesisVectors runs the matching test vectors of the thesis digest.
func TestThesisVectors(t *testing.T) {
	eval := func(expr, other string) string {
		t.Helper()
		o, err := Parse(other)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ParseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		return New().EvalExpr(e, o).String()
	}
	for _, tc := range []struct{ expr, other, want string }{
		{`other.Memory > 32`, `[Type="Job"]`, "undefined"},
		{`!(other.Memory == 32)`, `[Type="Job"]`, "undefined"},
		{`other.Mips >= 10 || other.Kflops >= 1000`, `[Kflops=2000]`, "true"},
		{`other.Mips >= 10 || other.Kflops >= 1000`, `[Mips=5]`, "undefined"},
		{`other.Mips >= 10 || other.Kflops >= 1000`, `[Mips=20]`, "true"},
		{`other.Memory is undefined || other.Memory < 32`, `[]`, "true"},
		{`other.Memory is undefined || other.Memory < 32`, `[Memory=64]`, "false"},
		{`other.Owner=="raman" ? 1 : 0`, `[Owner="RAMAN"]`, "1"},
		{`other.Owner=="raman" ? 1 : 0`, `[]`, "undefined"},
		{`other.x > 10`, `[x=73282]`, "true"},
		{`other.x > "a"`, `[x=73282]`, "error"},
		{`Memory`, `[Memory=5]`, "5"}, // bare names fall back to the target
	} {
		if got := eval(tc.expr, tc.other); got != tc.want {
			t.Errorf("%s against %s = %s, want %s", tc.expr, tc.other, got, tc.want)
		}
	}
	ads := func(src ...string) []*ClassAd {
		var out []*ClassAd
		for _, s := range src {
			ad, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ad)
		}
		return out
	}
	o := ads(`[x=10; Requirements=other.y>=7]`, `[x=7; Requirements=other.y<=5]`)
	r := ads(`[y=8; Requirements=other.x>=8]`, `[y=3; Requirements=other.x<=15]`)
	want := [2][2]bool{{true, false}, {false, true}}
	for i := range o {
		for j := range r {
			if got := Match(o[i], r[j]); got != want[i][j] {
				t.Errorf("O%d-R%d match = %v", i+1, j+1, got)
			}
		}
	}
}

func TestMatchScopes(t *testing.T) {
	a, _ := Parse(`[ Name = "a"; Requirements = TARGET.Name == "b" && Name == "a" && Shared == 1 && MY.Own == 2; Own = 2 ]`)
	b, _ := Parse(`[ Name = "b"; Requirements = other.Name == "a" && Own == 3 && Shared == 1; Own = 3; Shared = 1 ]`)
	if !Match(a, b) {
		t.Errorf("scopes: a against b = %v, b against a = %v",
			a.EvalAttrAgainst("Requirements", b), b.EvalAttrAgainst("Requirements", a))
	}
	// An attribute of the target refers to the target's own attributes.
	c, _ := Parse(`[ Requirements = TARGET.Derived == 6 ]`)
	d, _ := Parse(`[ Requirements = true; Derived = Own * 2; Own = 3 ]`)
	if !Match(c, d) {
		t.Error("target attribute evaluated in the wrong scope")
	}
	// Cycles through the target end in undefined too.
	e, _ := Parse(`[ Requirements = TARGET.p; q = TARGET.p ]`)
	f, _ := Parse(`[ Requirements = true; p = TARGET.q ]`)
	if got := e.EvalAttrAgainst("Requirements", f); !got.IsUndefined() {
		t.Errorf("cycle through the target = %v", got)
	}
}

func TestConcurrentMatch(t *testing.T) {
	job, machine := figure12(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := NewMatcher()
			for range 200 {
				if !Match(job, machine) || !m.Match(machine, job) || Rank(job, machine) == 0 {
					t.Error("concurrent match failed")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// OldString prints values as old ClassAds and HTCondor's tools do.
func TestValueOldString(t *testing.T) {
	for src, want := range map[string]string{
		"0.25":       "0.25",
		"1.5 * 2":    "3.0",
		`"a\"b"`:     `"a\"b"`,
		"{ 1, 2.5 }": "{ 1,2.5 }",
		"7":          "7",
		"undefined":  "undefined",
	} {
		e, err := ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := New().EvalExpr(e, nil).OldString(); got != want {
			t.Errorf("%s: OldString %q, want %q", src, got, want)
		}
	}
}

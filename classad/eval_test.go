package classad

import (
	"strings"
	"testing"
)

// evalCases pairs an expression with its value, printed. They are evaluated
// in the ad evalScope, with no target.
var evalCases = []struct{ expr, want string }{
	// literals
	{`3`, `3`}, {`0.5`, `0.5`}, {`3.0`, `3.0`}, {`1e3`, `1000.0`}, {`"text"`, `"text"`},
	{`true`, `true`}, {`FALSE`, `false`}, {`Undefined`, `undefined`}, {`error`, `error`},
	{`0xff`, `255`}, {`0600`, `384`}, {`2K`, `2048.0`}, {`1M`, `1048576.0`}, {`.5`, `0.5`},
	{`{ 1, 2 }`, `{ 1,2 }`}, {`{}`, `{  }`}, {`[ a = 1 ]`, `[ a = 1 ]`},
	{`"a\"b\\c\n"`, `"a\"b\\c\n"`}, {`"\101"`, `"A"`},
	{`-9223372036854775808`, `-9223372036854775808`},

	// arithmetic
	{`1 + 2 * 3`, `7`}, {`(1 + 2) * 3`, `9`}, {`7 / 2`, `3`}, {`-7 / 2`, `-3`}, {`7 % 3`, `1`},
	{`-7 % 3`, `-1`}, {`7.0 / 2`, `3.5`}, {`1 / 0`, `error`}, {`1 % 0`, `error`}, {`1.0 / 0`, `error`},
	{`5.5 % 2`, `1.5`}, {`1 + 0.5`, `1.5`}, {`true + 1`, `2`}, {`"a" + 1`, `error`}, {`"a" + "b"`, `error`},
	{`undefined + 1`, `undefined`}, {`error + 1`, `error`}, {`undefined + error`, `error`},
	{`undefined * 3`, `undefined`}, {`10 / "a"`, `error`}, {`-x`, `-1`}, {`+y`, `2.5`}, {`-"a"`, `error`},
	{`9223372036854775807 + 1`, `-9223372036854775808`}, {`-9223372036854775808 / -1`, `-9223372036854775808`},
	{`{1} + 1`, `error`},

	// comparison
	{`1 == 1.0`, `true`}, {`1 < 2.5`, `true`}, {`"abc" == "ABC"`, `true`}, {`"abc" != "ABC"`, `false`},
	{`"abc" < "ABD"`, `true`}, {`"b" > "A"`, `true`}, {`"a" == 1`, `error`}, {`true == 1`, `true`},
	{`false < true`, `true`}, {`undefined == 1`, `undefined`}, {`u == u`, `undefined`}, {`error == 1`, `error`},
	{`{1} == {1}`, `error`}, {`3 >= 3`, `true`}, {`3 <= 2`, `false`}, {`s == "ABC"`, `true`},

	// meta-equality
	{`"abc" =?= "ABC"`, `false`}, {`"abc" =?= "abc"`, `true`}, {`"abc" =!= "ABC"`, `true`},
	{`1 is 1.0`, `false`}, {`1 =?= 1`, `true`}, {`undefined is undefined`, `true`}, {`error is error`, `true`},
	{`undefined is error`, `false`}, {`undefined isnt 3`, `true`}, {`u =?= undefined`, `true`},
	{`{1} is {1}`, `true`}, {`{1} is {2}`, `false`}, {`true =?= 1`, `false`},

	// logic (libclassad short-circuits)
	{`false && error`, `false`}, {`true || error`, `true`}, {`false && undefined`, `false`},
	{`undefined && false`, `false`}, {`undefined || true`, `true`}, {`undefined && true`, `undefined`},
	{`true && undefined`, `undefined`}, {`undefined || false`, `undefined`}, {`error && false`, `error`},
	{`true && error`, `error`}, {`undefined && error`, `error`}, {`!undefined`, `undefined`}, {`!error`, `error`},
	{`!true`, `false`}, {`1 && true`, `true`}, {`0 || false`, `false`}, {`"a" && true`, `error`},
	{`!0`, `true`}, {`!"a"`, `error`}, {`false || true`, `true`}, {`true && true`, `true`},

	// bitwise
	{`6 & 3`, `2`}, {`6 | 3`, `7`}, {`6 ^ 3`, `5`}, {`~0`, `-1`}, {`1 << 4`, `16`}, {`-16 >> 2`, `-4`},
	{`-1 >>> 60`, `15`}, {`1 << 64`, `1`}, {`true & false`, `error`}, {`1.0 | 1`, `error`},
	{`undefined & 1`, `undefined`},

	// conditional and elvis
	{`true ? 1 : 2`, `1`}, {`false ? 1 : 2`, `2`}, {`undefined ? 1 : 2`, `undefined`}, {`error ? 1 : 2`, `error`},
	{`1 ? 2 : 3`, `2`}, {`"a" ? 2 : 3`, `error`}, {`true ? 1 : error`, `1`}, {`u ?: 4`, `4`}, {`x ?: 4`, `1`},
	{`error ?: 4`, `error`}, {`false ? 1 : true ? 2 : 3`, `2`},

	// subscripts and selection
	{`{10,20,30}[1]`, `20`}, {`{10,20,30}[3]`, `error`}, {`{10,20,30}[-1]`, `error`}, {`{10,20,30}[1.0]`, `error`},
	{`l[0]`, `1`}, {`l[u]`, `undefined`}, {`n.b`, `2`}, {`n["b"]`, `2`}, {`n.missing`, `undefined`},
	{`{[a=1],[a=2]}.a`, `{ 1,2 }`}, {`{[a=1],[b=2]}.a`, `{ 1,undefined }`}, {`undefined.q`, `undefined`},
	{`(3).q`, `error`}, {`[a = 1; b = [c = 2]; d = b.a].d`, `1`}, {`[x = 1; y = [x = 2; z = x; w = parent.x; v = root.x]].y.z`, `2`},
	{`[x = 1; y = [x = 2; w = parent.x]].y.w`, `1`}, {`n.nested.deep`, `3`}, {`MY.x`, `1`}, {`self.x`, `1`},
	{`TARGET.x`, `undefined`}, {`parent`, `undefined`}, {`.x`, `1`}, {`X`, `1`}, {`'x'`, `1`},

	// circular references
	{`[a = b; b = a].a`, `error`}, {`cyc`, `error`}, {`[a = a + a].a`, `error`},

	// type predicates
	{`isUndefined(u)`, `true`}, {`isUndefined(x)`, `false`}, {`isError(1/0)`, `true`}, {`isString(s)`, `true`},
	{`isInteger(x)`, `true`}, {`isReal(y)`, `true`}, {`isBoolean(true)`, `true`}, {`isList(l)`, `true`},
	{`isClassAd(n)`, `true`}, {`isAbsTime(absTime(0))`, `true`}, {`isRelTime(relTime(5))`, `true`},
	{`ISUNDEFINED(u)`, `true`}, {`isString(1)`, `false`}, {`nosuchfunction(1)`, `error`}, {`isString()`, `error`},

	// conversions
	{`int(3.7)`, `3`}, {`int(-3.7)`, `-3`}, {`int("42")`, `42`}, {`int("4.9")`, `4`}, {`int(true)`, `1`},
	{`int("x")`, `error`}, {`int(u)`, `undefined`}, {`real(3)`, `3.0`}, {`real("2.5")`, `2.5`},
	{`real("INF")`, `real("INF")`}, {`real("NaN")`, `real("NaN")`}, {`string(3)`, `"3"`}, {`string(2.5)`, `"2.5"`},
	{`string(true)`, `"true"`}, {`string("s")`, `"s"`}, {`bool(0)`, `false`}, {`bool(2)`, `true`},
	{`bool("TRUE")`, `true`}, {`bool("no")`, `error`}, {`ifThenElse(x > 0, "pos", "neg")`, `"pos"`},
	{`ifThenElse(u, 1, 2)`, `undefined`}, {`ifThenElse(false, error, 2)`, `2`}, {`int(relTime(90))`, `90`},

	// strings
	{`strcat("a", 1, 2.5, true)`, `"a12.5true"`}, {`strcat("a", u)`, `error`}, {`strcat()`, `""`},
	{`substr("abcdef", 2)`, `"cdef"`}, {`substr("abcdef", 2, 2)`, `"cd"`}, {`substr("abcdef", -2)`, `"ef"`},
	{`substr("abcdef", 1, -1)`, `"bcde"`}, {`substr("abc", 10)`, `""`}, {`substr(1, 1)`, `error`},
	{`strcmp("a", "b")`, `-1`}, {`strcmp("b", "a")`, `1`}, {`strcmp("a", "a")`, `0`}, {`strcmp("A", "a")`, `-1`},
	{`stricmp("A", "a")`, `0`}, {`toUpper("abC")`, `"ABC"`}, {`toLower("AbC")`, `"abc"`}, {`size("abc")`, `3`},
	{`size({1,2})`, `2`}, {`size([a=1;b=2])`, `2`}, {`size(1)`, `error`}, {`size(u)`, `undefined`},
	{`join(",", {"a", "b"})`, `"a,b"`}, {`join("-", "a", 1, 2)`, `"a-1-2"`}, {`join({"a", "b"})`, `"ab"`},
	{`split("a b,c")`, `{ "a","b","c" }`}, {`split("a:b::c", ":")`, `{ "a","b","c" }`},
	{`splitUserName("jo@example.org")`, `{ "jo","example.org" }`}, {`splitSlotName("slot1@host")`, `{ "slot1","host" }`},
	{`splitSlotName("host")`, `{ "","host" }`},
	{`sprintf("%d-%s-%.2f-%5.1e-%x-%%", 42, "s", 2.5, 1000.0, 255)`, `"42-s-2.50-1.0e+03-ff-%"`},
	{`sprintf("%s", {1})`, `"{ 1 }"`}, {`sprintf("%d")`, `error`}, {`sprintf("%03d", 7)`, `"007"`},
	{`regexp("^a.c$", "abc")`, `true`}, {`regexp("^A", "abc")`, `false`}, {`regexp("^A", "abc", "i")`, `true`},
	{`regexp("(", "abc")`, `error`}, {`regexp(s, "xabcx")`, `true`}, {`regexp("B", "abc", "i")`, `true`},
	{`regexp("^x", regexps(s, "abc", "x\\0"))`, `true`}, {`regexp(("^a"), "abc")`, `true`}, {`regexp(1, "a")`, `error`}, {`regexps("(b+)", "abbbc", "<\\1>")`, `"<bbb>"`},
	{`replace("b", "abcb", "X")`, `"aXcb"`}, {`replaceAll("b", "abcb", "X")`, `"aXcX"`},
	{`regexpMember("^b", {"a", "bc"})`, `true`}, {`regexpMember("^z", {"a", "bc"})`, `false`},
	{`stringListSize("a, b ,c")`, `3`}, {`stringListSize("a;b", ";")`, `2`}, {`stringListSum("1,2,3")`, `6`},
	{`stringListSum("1,2.5")`, `3.5`}, {`stringListAvg("1,2")`, `1.5`}, {`stringListMin("3,1,2")`, `1`},
	{`stringListMax("3,1,2")`, `3`}, {`stringListMin("")`, `undefined`}, {`stringListSum("a")`, `error`},
	{`stringListMember("b", "a,b,c")`, `true`}, {`stringListMember("B", "a,b,c")`, `false`},
	{`stringListIMember("B", "a,b,c")`, `true`}, {`stringListsIntersect("a,b", "c,b")`, `true`},
	{`stringListsIntersect("a,b", "c,d")`, `false`}, {`stringListSubsetMatch("a,b", "b,c,a")`, `true`},
	{`stringListISubsetMatch("A,b", "b,c,a")`, `true`}, {`stringListRegexpMember("^x", "ab,xy")`, `true`},
	{`versioncmp("1.10", "1.9")`, `1`}, {`versioncmp("1.2", "1.2")`, `0`}, {`versioncmp("a1", "a10")`, `-1`},
	{`versionGT("8.9.1", "8.10.0")`, `false`}, {`versionLE("8.9.1", "8.10.0")`, `true`},
	{`version_in_range("8.9.5", "8.9.0", "8.9.9")`, `true`}, {`versionEQ("1.01", "1.1")`, `true`},

	// lists
	{`member(2, {1, 2, 3})`, `true`}, {`member("B", {"a", "b"})`, `true`}, {`member(4, {1, "a"})`, `false`},
	{`member(u, {1})`, `undefined`}, {`member(1, 2)`, `error`}, {`identicalMember("B", {"a", "b"})`, `false`},
	{`identicalMember("b", {"a", "b"})`, `true`}, {`identicalMember(undefined, {undefined})`, `true`},
	{`sum({1, 2, 3})`, `6`}, {`sum({1, 2.5})`, `3.5`}, {`sum({})`, `0`}, {`sum({1, "a"})`, `error`},
	{`avg({1, 2})`, `1.5`}, {`avg({})`, `0.0`}, {`min({3, 1, 2})`, `1`}, {`max({3, 1.5})`, `3`}, {`min({})`, `undefined`},
	{`sum({1, undefined})`, `undefined`}, {`anyCompare("<", {1, 5}, 3)`, `true`}, {`allCompare("<", {1, 5}, 3)`, `false`},
	{`allCompare("==", {"a", "A"}, "a")`, `true`}, {`anyCompare("is", {"A"}, "a")`, `false`}, {`anyCompare("<>", {1}, 1)`, `error`},

	// math
	{`floor(2.7)`, `2`}, {`floor(-2.5)`, `-3`}, {`ceiling(2.1)`, `3`}, {`ceiling(4)`, `4`}, {`round(2.5)`, `2`},
	{`round(3.5)`, `4`}, {`round(-2.5)`, `-2`}, {`round(2.6)`, `3`}, {`floor("3.5")`, `3`}, {`floor({1})`, `error`},
	{`pow(2, 10)`, `1024`}, {`pow(2, -1)`, `0.5`}, {`pow(2.0, 3)`, `8.0`}, {`quantize(10, 4)`, `12`},
	{`quantize(12, 4)`, `12`}, {`quantize(2.5, 1)`, `3.0`}, {`quantize(5, {2, 8, 16})`, `8`}, {`quantize(20, {2, 8, 16})`, `32`},
	{`quantize(1, 0)`, `error`}, {`random(1)`, `0`}, {`random(0)`, `error`},
	{`isReal(random())`, `true`},

	// times
	{`absTime("2020-01-02T03:04:05Z")`, `absTime("2020-01-02T03:04:05+00:00")`},
	{`absTime("2020-01-02T03:04:05-06:00")`, `absTime("2020-01-02T03:04:05-06:00")`},
	{`absTime(0, 0)`, `absTime("1970-01-01T00:00:00+00:00")`}, {`int(absTime("1970-01-02T00:00:00Z"))`, `86400`},
	{`relTime("1+02:03:04")`, `relTime("1+02:03:04")`}, {`relTime("2:00")`, `relTime("00:02:00")`},
	{`relTime("1d2h")`, `relTime("1+02:00:00")`}, {`relTime(-90)`, `relTime("-00:01:30")`}, {`relTime("x")`, `error`},
	{`absTime(100, 0) + relTime(20)`, `absTime("1970-01-01T00:02:00+00:00")`},
	{`absTime(100, 0) - absTime(40, 0)`, `relTime("00:01:00")`}, {`relTime(60) * 2`, `relTime("00:02:00")`},
	{`relTime(60) + relTime(1)`, `relTime("00:01:01")`}, {`absTime(1, 0) + absTime(1, 0)`, `error`},
	{`relTime(60) < relTime(61)`, `true`}, {`absTime(60, 0) == absTime(60, 3600)`, `true`}, {`relTime(60) == 60`, `error`},
	{`getYear(absTime("2021-03-04T05:06:07Z"))`, `2021`}, {`getMonth(absTime("2021-03-04T05:06:07Z"))`, `3`},
	{`getDayOfMonth(absTime("2021-03-04T05:06:07Z"))`, `4`}, {`getDayOfYear(absTime("2021-01-01T05:06:07Z"))`, `0`},
	{`getDayOfWeek(absTime("2021-03-04T05:06:07Z"))`, `4`}, {`getHours(absTime("2021-03-04T05:06:07Z"))`, `5`},
	{`getMinutes(absTime("2021-03-04T05:06:07Z"))`, `6`}, {`getSeconds(absTime("2021-03-04T05:06:07Z"))`, `7`},
	{`getDays(relTime("3+04:05:06"))`, `3`}, {`getHours(relTime("3+04:05:06"))`, `4`}, {`getYear(relTime(1))`, `error`},
	{`inHours(relTime(5400))`, `1.5`}, {`inDays(relTime(86400))`, `1.0`}, {`inMinutes(120)`, `2.0`},
	{`splitTime(absTime("2021-03-04T05:06:07Z")).Month`, `3`}, {`splitTime(relTime(3700)).Hours`, `1`},
	{`formatTime(absTime("2021-03-04T05:06:07Z"), "%Y-%m-%d %H:%M:%S %j %a %b %%")`, `"2021-03-04 05:06:07 063 Thu Mar %"`},
	{`interval(3661)`, `"01:01:01"`}, {`isInteger(time())`, `true`}, {`time() > 1600000000`, `true`},

	// eval and unparse
	{`eval("1 + 2")`, `3`}, {`eval("x + 1")`, `2`}, {`eval("(")`, `error`}, {`eval(3)`, `error`},
	{`unparse(z)`, `"x + 1"`}, {`unparse(n.b)`, `"a + 1"`}, {`unparse(nope)`, `undefined`}, {`selfeval`, `error`},
	{`debug(3)`, `3`},
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

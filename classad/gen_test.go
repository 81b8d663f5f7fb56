package classad

import (
	"math/rand/v2"
	"strings"
)

// exprGen writes random ClassAd expressions for differential testing
// against HTCondor's libclassad. It covers every operator, every builtin
// libclassad has (and names that exist in neither library), all value
// kinds, nested lists and ads, attribute references and the scope words.
type exprGen struct {
	r *rand.Rand
}

func newExprGen(seed uint64) *exprGen {
	return &exprGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *exprGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

var (
	genInts = []string{"0", "1", "2", "3", "-1", "7", "10", "42", "63", "64", "65", "100", "-8",
		"1000000", "9223372036854775807", "-9223372036854775807", "4294967296", "3000000000", "0x10", "010"}
	genReals = []string{"0.0", "1.5", "-2.5", "0.5", "3.0", "100.0", "1e3", "2.5E-3", "1234567.891",
		"1e300", "1.7976931348623157e308", "0.1", "123456789012345678.0", "1.0e-310", ".5", "3e9"}
	genStrings = []string{`""`, `"abc"`, `"ABC"`, `"a,b c"`, `"a, b,c"`, `"0x10"`, `"010"`, `"yes"`,
		`"no"`, `"true"`, `"FALSE"`, `"t"`, `"1:00"`, `"1+02:03:04"`, `"-1:30"`, `"12.5"`, `" 42 "`,
		`"-7"`, `"1e3"`, `"INF"`, `"-inf"`, `"nan"`, `"2020-01-02T03:04:05"`, `"2020-01-02T03:04:05+01:00"`,
		`"a\"b"`, `"tab\there"`, `"a.b"`, `"1.2.3"`, `"1.10.0"`, `"a*"`, `"[a-c]+"`, `"^A"`, `"(b)(c)"`,
		`"user@host"`, `"slot1@host"`, `"slot1_2@host"`, `"%d"`, `"%s-%d"`, `"%5.2f"`, `"%%"`, `"i"`,
		`"\\"`, `"new\nline"`, `"Str"`, `"str"`, `"a;b"`, `"1,2,3"`, `"1, 2.5, x"`, `"x"`, `"\u00e9"`}
	genWords = []string{"true", "false", "undefined", "error", "TRUE", "Undefined"}
	// genAttrs are the attributes of the ads in genAds, and some missing.
	// MY, TARGET and other appear only in match requests: outside a match
	// libclassad binds them to nothing, while Harrier binds MY to the ad
	// (see doc.go).
	genAttrs = []string{"a", "b", "s", "l", "n", "u", "e", "r", "c", "t", "li", "zz", "A", "S", "rt", "at",
		"self.r", "parent.a", "root.a", ".a", "n.x", "n.y",
		"n.z", "n.w", "li.x", "n.nn.p", "n.nn.q", "parent", "root", "self"}
	genUnary  = []string{"-", "+", "!", "~"}
	genBinary = []string{"||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "is", "isnt",
		"<", "<=", ">", ">=", "<<", ">>", ">>>", "+", "-", "*", "/", "%"}
)

// genAds are the ads expressions are evaluated in; "" is the empty ad.
var genAds = []string{
	"",
	`[ a = 1; b = 2.5; s = "Str"; l = { 1, 2.5, "x", undefined }; n = [ x = 1; y = a; z = parent.b; w = x + y; nn = [ p = parent.x; q = root.a ] ]; u = undefined; e = error; r = a + b; c = r * 2; t = true; li = { [ x = 1 ], [ x = 2 ], 3 }; A = "dup"; rt = relTime(90); at = absTime(86400) ]`,
	`[ a = "A"; b = { 1, 2, 3 }; s = strcat(a, "x"); l = { }; n = [ x = "x"; y = undefined ]; r = b[1]; c = size(b); t = a == "a"; u = zz ]`,
	`[ a = -7; b = 0.0; s = ""; l = { {1,2}, {3} }; n = [ ]; r = a / 2; c = a % 3; e = 1 / 0; t = false; li = { } ]`,
}

// genFuncs lists the builtins with the argument counts to try. Counts past
// the documented ones check that wrong arities agree too. The functions
// HTCondor's daemons add to libclassad (split, splitUserName,
// splitSlotName, sprintf, the stringList family but stringListsIntersect,
// evalInEachContext, countMatches) are not in the oracle and are left out;
// so is random, whose values are chance.
var genFuncs = []struct {
	name  string
	arity []int
}{
	{"strcat", []int{0, 1, 2, 3}}, {"join", []int{1, 2, 3}}, {"substr", []int{2, 3, 1}},
	{"strcmp", []int{2, 1}}, {"stricmp", []int{2}}, {"toUpper", []int{1, 0}}, {"toLower", []int{1}},
	{"size", []int{1, 2}}, {"length", []int{1}}, {"regexp", []int{2, 3}},
	{"regexps", []int{3, 4}}, {"replace", []int{3, 4}}, {"replaceAll", []int{3, 4}},
	{"regexpMember", []int{2, 3}}, {"stringListsIntersect", []int{2, 3}},
	{"versioncmp", []int{2}}, {"versionGT", []int{2}}, {"versionGE", []int{2}}, {"versionLT", []int{2}},
	{"versionLE", []int{2}}, {"versionEQ", []int{2}}, {"version_in_range", []int{3}},
	{"int", []int{1, 2}}, {"real", []int{1}}, {"string", []int{1, 0}}, {"bool", []int{1}},
	{"absTime", []int{1, 2}}, {"relTime", []int{1}}, {"member", []int{2, 3}},
	{"identicalMember", []int{2}}, {"isMember", []int{2}}, {"sum", []int{1, 0}}, {"avg", []int{1}},
	{"min", []int{1, 2}}, {"max", []int{1}}, {"anyCompare", []int{3}}, {"allCompare", []int{3}},
	{"floor", []int{1}}, {"ceiling", []int{1}}, {"ceil", []int{1}}, {"round", []int{1}},
	{"pow", []int{2, 1}}, {"quantize", []int{2}}, {"eval", []int{1}}, {"unparse", []int{1}},
	{"debug", []int{1}}, {"isUndefined", []int{1, 2}}, {"isError", []int{1}}, {"isString", []int{1}},
	{"isInteger", []int{1}}, {"isReal", []int{1}}, {"isBoolean", []int{1}}, {"isList", []int{1}},
	{"isClassAd", []int{1}}, {"isAbsTime", []int{1}}, {"isRelTime", []int{1}},
	{"ifThenElse", []int{3, 2}}, {"interval", []int{1}}, {"formatTime", []int{1, 2}},
	{"splitTime", []int{1}}, {"getYear", []int{1}}, {"getMonth", []int{1}}, {"getDayOfYear", []int{1}},
	{"getDayOfMonth", []int{1}}, {"getDayOfWeek", []int{1}}, {"getHours", []int{1}},
	{"getMinutes", []int{1}}, {"getSeconds", []int{1}}, {"getDays", []int{1}}, {"inDays", []int{1}},
	{"inHours", []int{1}}, {"inMinutes", []int{1}}, {"inSeconds", []int{1}}, {"currentTime", []int{1}},
	{"dayTime", []int{1}}, {"noSuchFunction", []int{0, 1}}, {"listToString", []int{1}},
	{"strftime", []int{1}}, {"time", []int{1}},
}

// genFormats are formatTime patterns.
var genFormats = []string{`"%Y-%m-%d"`, `"%H:%M:%S"`, `"%c"`, `"%A %B %j"`, `"%%"`, `"%s"`, `"%z"`, `"x"`}

// expr returns an expression of at most depth levels of operators.
func (g *exprGen) expr(depth int) string {
	if depth <= 0 || g.r.IntN(4) == 0 {
		return g.leaf()
	}
	switch g.r.IntN(20) {
	case 0, 1:
		return g.pick(genUnary) + g.operand(depth-1)
	case 2, 3, 4, 5, 6:
		return g.operand(depth-1) + " " + g.pick(genBinary) + " " + g.operand(depth-1)
	case 7:
		return g.operand(depth-1) + " ? " + g.operand(depth-1) + " : " + g.operand(depth-1)
	case 8:
		return g.operand(depth-1) + " ?: " + g.operand(depth-1)
	case 9:
		return g.list(depth - 1)
	case 10:
		return g.ad(depth - 1)
	case 11:
		x := g.operand(depth - 1)
		if isDigit(x[0]) || x[0] == '.' || x[0] == '-' {
			x = "(" + x + ")" // 1.a would read as a malformed number
		}
		return x + "." + g.pick([]string{"a", "x", "b", "y", "s", "zz"})
	case 12:
		return g.operand(depth-1) + "[" + g.expr(depth-1) + "]"
	case 13:
		return "(" + g.expr(depth-1) + ")"
	}
	return g.call(depth - 1)
}

// operand is expr, parenthesized unless it is a leaf, so that the
// precedence of the outer operator does not regroup it.
func (g *exprGen) operand(depth int) string {
	e := g.expr(depth)
	if depth > 0 && g.r.IntN(8) != 0 && !isGenLeaf(e) {
		return "(" + e + ")"
	}
	return e
}

func isGenLeaf(e string) bool {
	return !strings.ContainsAny(e, " ([{")
}

func (g *exprGen) leaf() string {
	switch g.r.IntN(12) {
	case 0, 1:
		return g.pick(genInts)
	case 2, 3:
		return g.pick(genReals)
	case 4, 5:
		return g.pick(genStrings)
	case 6:
		return g.pick(genWords)
	case 7:
		return `absTime(` + g.pick([]string{"0", "86400", `"2020-01-02T03:04:05"`, `"2021-06-30T23:59:59-05:00"`, "1700000000"}) + `)`
	case 8:
		return `relTime(` + g.pick([]string{"0", "90", "-3600.5", `"1:00"`, `"1+02:03:04"`, `"-00:00:30"`, "86401"}) + `)`
	}
	return g.pick(genAttrs)
}

func (g *exprGen) list(depth int) string {
	n := g.r.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.expr(depth)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func (g *exprGen) ad(depth int) string {
	n := g.r.IntN(4)
	names := []string{"x", "y", "a", "z"}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = names[i] + " = " + g.expr(depth)
	}
	return "[ " + strings.Join(parts, "; ") + " ]"
}

func (g *exprGen) call(depth int) string {
	f := genFuncs[g.r.IntN(len(genFuncs))]
	n := f.arity[g.r.IntN(len(f.arity))]
	args := make([]string, n)
	for i := range args {
		args[i] = g.arg(f.name, i, depth)
	}
	return f.name + "(" + strings.Join(args, ", ") + ")"
}

// arg biases arguments toward what the function expects, so that calls
// reach past the type checks more often than uniform choice would.
func (g *exprGen) arg(fn string, i, depth int) string {
	lower := strings.ToLower(fn)
	if lower == "abstime" || lower == "reltime" {
		// A string literal here is read when parsed, and libclassad reads
		// malformed times in ways of its own (absTime("2020") is the last
		// day of 2019) where Harrier refuses them. A parenthesized string
		// is read at run time by both.
		if e := g.expr(depth); e[0] == '"' {
			return "(" + e + ")"
		} else {
			return e
		}
	}
	if g.r.IntN(3) == 0 {
		return g.expr(depth)
	}
	switch {
	case lower == "formattime" && i == 1:
		return g.pick(genFormats)
	case strings.HasPrefix(lower, "regexp") || strings.HasPrefix(lower, "replace"):
		if i == 0 {
			return g.pick([]string{`"a"`, `"^A"`, `"[a-c]+"`, `"(b)(c)"`, `"x*"`, `"\\d+"`, `"("`})
		}
		if i == 2 && lower != "regexp" && lower != "regexpmember" {
			return g.pick([]string{`"\\1"`, `"<\\0>"`, `"z"`, `"i"`})
		}
		if i == 3 || (i == 2 && (lower == "regexp" || lower == "regexpmember")) {
			return g.pick([]string{`"i"`, `""`, `"m"`, `"s"`, `"g"`})
		}
	case strings.HasPrefix(lower, "stringlist"):
		if g.r.IntN(2) == 0 {
			return g.pick([]string{`"a,b c"`, `"1, 2.5, x"`, `"1,2,3"`, `"A, b"`, `""`, `"a;b"`, `",,a"`})
		}
	case lower == "member" || lower == "identicalmember" || lower == "sum" || lower == "avg" ||
		lower == "min" || lower == "max" || lower == "join" || lower == "anycompare" || lower == "allcompare":
		if (i == 1 || lower == "sum" || lower == "avg" || lower == "min" || lower == "max") && g.r.IntN(2) == 0 {
			return g.list(depth)
		}
		if (lower == "anycompare" || lower == "allcompare") && i == 0 {
			return g.pick([]string{`"<"`, `"=="`, `">="`, `"!="`, `"is"`, `"=?="`, `"isnt"`, `"bad"`})
		}
	}
	return g.expr(depth)
}

// line returns one request for the oracle: an expression, alone or with
// an ad to evaluate it in (joined by a tab), or a match of two ads.
func (g *exprGen) line() string {
	if g.r.IntN(16) == 0 {
		return "match\t" + g.matchAd() + "\t" + g.matchAd()
	}
	e := g.expr(1 + g.r.IntN(4))
	ad := genAds[g.r.IntN(len(genAds))]
	if ad == "" {
		return e
	}
	return ad + "\t" + e
}

// matchAd is an ad whose Requirements refers to both sides of a match.
func (g *exprGen) matchAd() string {
	req := g.pick([]string{"TARGET.a", "MY.a", "other.b", "my.b", "a", "b", "s", "TARGET.zz"}) + " " +
		g.pick([]string{"==", "<", ">=", "=?=", "!=", "&&"}) + " " + g.operand(1)
	if g.r.IntN(3) == 0 {
		req = g.expr(3)
	}
	return "[ Requirements = " + req + "; a = " + g.leaf() + "; b = " + g.leaf() + " ]"
}

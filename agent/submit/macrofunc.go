package submit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"harrier.dev/harrier/cformat"
	"harrier.dev/harrier/classad"
)

// eval returns the replacement of one reference. The replacement of
// $(name) is the macro's value as written, which rewrite then reads again;
// functions expand the macros they take as arguments themselves.
func (x *expander) eval(r *ref, depth int) (string, error) {
	switch r.kind {
	case refMacro:
		v, ok := x.lookup(r.name())
		if def, hasDef := r.def(); hasDef && (!ok || v == "") {
			return def, nil
		}
		return v, nil
	case refEnv:
		return x.env(r), nil
	case refRandomChoice:
		return x.randomChoice(r.body, depth)
	case refRandomInteger:
		return x.randomInteger(r.body)
	case refChoice:
		return x.choice(r.body, depth)
	case refSubstr:
		return x.substr(r.body, depth)
	case refInt, refReal:
		return x.number(r, depth)
	case refString:
		return x.stringOf(r.body, depth)
	case refEval:
		return x.evalOf(r.body, depth)
	case refBasename:
		return x.pathOf("nx", r.body, depth)
	case refDirname:
		return x.pathOf("p", r.body, depth)
	case refFile:
		return x.pathOf(r.fn, r.body, depth)
	}
	return "", fmt.Errorf("unknown macro function in %q", r.body)
}

// argValue returns a function argument: the value of the macro it names,
// or the text itself if it names none, expanded.
func (x *expander) argValue(arg string, depth int) (string, error) {
	arg = strings.TrimSpace(arg)
	if v, ok := x.lookup(arg); ok {
		arg = v
	}
	return x.rewrite(arg, fullExpansion, depth+1)
}

// env implements $ENV(name[:default]): an unset variable without a default
// is the word UNDEFINED, as in condor_submit.
func (x *expander) env(r *ref) string {
	var v string
	var ok bool
	if x.getenv != nil {
		v, ok = x.getenv(r.name())
	}
	if v == "" {
		if def, hasDef := r.def(); hasDef {
			return def
		}
		if !ok {
			return "UNDEFINED"
		}
	}
	return v
}

// random returns a random integer in [0,n).
func (x *expander) random(n int) int {
	if x.rand != nil {
		return x.rand(n)
	}
	return rand.IntN(n)
}

// randomChoice implements $RANDOM_CHOICE(a,b,...) and $RANDOM_CHOICE(list),
// where list names a macro holding a comma-separated list.
func (x *expander) randomChoice(body string, depth int) (string, error) {
	items := body
	if !strings.Contains(body, ",") {
		if body == "" {
			return "", fmt.Errorf("$RANDOM_CHOICE(): no list to choose from")
		}
		var err error
		if items, err = x.argValue(body, depth); err != nil {
			return "", err
		}
	}
	list := strings.Split(items, ",")
	return strings.TrimSpace(list[x.random(len(list))]), nil
}

// randomInteger implements $RANDOM_INTEGER(min, max[, step]).
func (x *expander) randomInteger(body string) (string, error) {
	parts := strings.Split(body, ",")
	bad := func(what string) error {
		return fmt.Errorf("$RANDOM_INTEGER(%s): invalid %s (want $RANDOM_INTEGER(min, max[, step]))", body, what)
	}
	if len(parts) < 2 || len(parts) > 3 {
		return "", bad("arguments")
	}
	lo, ok := leadingInt(parts[0])
	if !ok {
		return "", bad("min")
	}
	hi, ok := leadingInt(parts[1])
	if !ok {
		return "", bad("max")
	}
	step := int64(1)
	if len(parts) == 3 {
		if step, ok = leadingInt(parts[2]); !ok || step < 1 {
			return "", bad("step")
		}
	}
	if lo > hi {
		return "", fmt.Errorf("$RANDOM_INTEGER(%s): min is greater than max", body)
	}
	n := uint64(hi-lo)/uint64(step) + 1
	if n == 0 || n > math.MaxInt32 {
		return "", fmt.Errorf("$RANDOM_INTEGER(%s): range too large", body)
	}
	v := lo + int64(uint64(x.random(int(n)))*uint64(step))
	return strconv.FormatInt(v, 10), nil
}

// choice implements $CHOICE(index, a, b, ...) and $CHOICE(index, list),
// where list names a macro holding a comma-separated list.
func (x *expander) choice(body string, depth int) (string, error) {
	parts := strings.Split(body, ",")
	if len(parts) < 2 {
		return "", fmt.Errorf("$CHOICE(%s): no list to choose from", body)
	}
	iv, err := x.argValue(parts[0], depth)
	if err != nil {
		return "", err
	}
	index, ok := toInt(iv)
	if !ok || index < 0 {
		return "", fmt.Errorf("$CHOICE(%s): %q is not a valid index", body, iv)
	}
	items := parts[1:]
	if len(items) == 1 {
		name := strings.TrimSpace(items[0])
		list, ok := x.lookup(name)
		if name == "" || !ok {
			return "", fmt.Errorf("$CHOICE(%s): no list named %q", body, name)
		}
		if list, err = x.rewrite(list, fullExpansion, depth+1); err != nil {
			return "", err
		}
		items = strings.Split(list, ",")
	}
	if index >= int64(len(items)) {
		return "", fmt.Errorf("$CHOICE(%s): index %d is out of range (the list has %d items)", body, index, len(items))
	}
	return strings.TrimSpace(items[index]), nil
}

// substr implements $SUBSTR(name, start[, length]): a negative start counts
// from the end, and a negative length leaves that many characters off the
// end.
func (x *expander) substr(body string, depth int) (string, error) {
	parts := strings.Split(body, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return "", fmt.Errorf("$SUBSTR(%s): want $SUBSTR(name, start[, length])", body)
	}
	v, err := x.argValue(parts[0], depth)
	if err != nil || v == "" {
		return "", err
	}
	intArg := func(arg, what string) (int, error) {
		s, err := x.argValue(arg, depth)
		if err != nil {
			return 0, err
		}
		n, ok := toInt(s)
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return 0, fmt.Errorf("$SUBSTR(%s): %q is not a valid %s", body, s, what)
		}
		return int(n), nil
	}
	start, err := intArg(parts[1], "start")
	if err != nil {
		return "", err
	}
	if start < 0 {
		start += len(v)
	}
	v = v[min(max(start, 0), len(v)):]
	if len(parts) == 3 {
		n, err := intArg(parts[2], "length")
		if err != nil {
			return "", err
		}
		if n < 0 {
			n += len(v)
		}
		v = v[:min(max(n, 0), len(v))]
	}
	return v, nil
}

// number implements $INT(name[,format]) and $REAL(name[,format]): name is a
// macro or an expression, evaluated as a ClassAd expression, and the
// format is everything after the comma, a C printf format with one
// conversion and any text around it.
func (x *expander) number(r *ref, depth int) (string, error) {
	fn, verbs := "$INT", cformat.IntVerbs
	if r.kind == refReal {
		fn, verbs = "$REAL", cformat.RealVerbs
	}
	arg, format, hasFormat := strings.Cut(r.body, ",")
	var f cformat.Format
	if hasFormat {
		var err error
		if f, err = cformat.Parse(format, verbs); err != nil {
			return "", fmt.Errorf("%s(%s): %w", fn, r.body, err)
		}
	}
	v, err := x.argValue(arg, depth)
	if err != nil {
		return "", err
	}
	if r.kind == refInt {
		n, ok := toInt(v)
		if !ok {
			return "", fmt.Errorf("%s(%s): %q does not evaluate to an integer", fn, r.body, v)
		}
		if !hasFormat {
			return strconv.FormatInt(n, 10), nil
		}
		return f.Int(n), nil
	}
	g, ok := toReal(v)
	if !ok {
		return "", fmt.Errorf("%s(%s): %q does not evaluate to a number", fn, r.body, v)
	}
	if !hasFormat {
		return defaultReal.Real(g), nil
	}
	out := f.Real(g)
	if !strings.Contains(out, ".") { // condor_submit makes it look like a real
		out += ".0"
	}
	return out, nil
}

// defaultReal is $REAL's format when none is given.
var defaultReal, _ = cformat.Parse("%.16G", cformat.RealVerbs)

// stringOf implements $STRING(name[,format]): the value of name, evaluated
// as a ClassAd expression if that gives a string, formatted with a %s
// format.
func (x *expander) stringOf(body string, depth int) (string, error) {
	arg, format, hasFormat := strings.Cut(body, ",")
	var f cformat.Format
	if hasFormat {
		var err error
		if f, err = cformat.Parse(format, cformat.StringVerbs); err != nil {
			return "", fmt.Errorf("$STRING(%s): %w", body, err)
		}
	}
	v, err := x.argValue(arg, depth)
	if err != nil {
		return "", err
	}
	if e, err := classad.ParseExpr(v); err == nil {
		if s, ok := classad.New().EvalExpr(e, nil).StringValue(); ok {
			v = s
		}
	}
	if !hasFormat {
		return v, nil
	}
	return f.Str(v), nil
}

// evalOf implements $EVAL(name): the value of name (or the text), expanded
// and evaluated as a ClassAd expression; a string result is given without
// quotes, anything else as ClassAd prints it, and text that is not an
// expression as it is.
func (x *expander) evalOf(body string, depth int) (string, error) {
	v, ok := x.lookup(body)
	if !ok {
		v = body
	}
	v, err := x.rewrite(v, fullExpansion, depth+1)
	if err != nil {
		return "", err
	}
	v = dollars(v)
	e, err := classad.ParseExpr(v)
	if err != nil {
		return v, nil
	}
	val := classad.New().EvalExpr(e, nil)
	if s, ok := val.StringValue(); ok {
		return s, nil
	}
	return val.String(), nil
}

// pathOf implements $F<letters>(name), $BASENAME and $DIRNAME on the value
// of the macro name or, as in the manual's $Fn(/tmp/simulate.exe), on the
// text itself when it names no macro.
func (x *expander) pathOf(letters, body string, depth int) (string, error) {
	name := strings.TrimSpace(body)
	v, ok := x.lookup(name)
	if !ok {
		v = name
	}
	v, err := x.rewrite(v, fullExpansion, depth+1)
	if err != nil {
		return "", err
	}
	return pathPart(v, letters, x.dir), nil
}

// toInt reads s as condor_submit reads an integer argument: a decimal
// integer, or a ClassAd expression whose value is an integer, a real
// (truncated) or a boolean (1 or 0).
func toInt(s string) (int64, bool) {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return n, true
	}
	v, ok := evalConstant(s)
	if !ok {
		return 0, false
	}
	if b, ok := v.BoolValue(); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return v.IntValue()
}

// toReal is toInt for reals.
func toReal(s string) (float64, bool) {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		return f, true
	}
	v, ok := evalConstant(s)
	if !ok {
		return 0, false
	}
	if b, ok := v.BoolValue(); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return v.RealValue()
}

// evalConstant evaluates s as a ClassAd expression outside any ad.
func evalConstant(s string) (classad.Value, bool) {
	e, err := classad.ParseExpr(s)
	if err != nil {
		return classad.Value{}, false
	}
	return classad.New().EvalExpr(e, nil), true
}

// leadingInt reads an integer as C's strtol does: white space, a sign and
// digits, ignoring what follows them.
func leadingInt(s string) (int64, bool) {
	s = strings.TrimLeft(s, " \t\r\n\v\f")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j == i {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:j], 10, 64)
	return n, err == nil
}

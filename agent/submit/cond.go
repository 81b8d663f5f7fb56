package submit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// languageVersion is the HTCondor version whose submit language Harrier
// speaks, which "if version >= x.y.z" compares with.
var languageVersion = [3]int{24, 0, 0}

// maxIfDepth bounds nested if statements, as condor_submit does.
const maxIfDepth = 63

// A condFrame is one if statement being read.
type condFrame struct {
	line    int  // of the if, for an if without endif
	enabled bool // lines of the current branch are read
	done    bool // a branch has been taken, or the whole if is in a skipped branch
	inElse  bool
}

// conditionals tracks the if statements of one file.
type conditionals struct {
	frames []condFrame
}

func (c *conditionals) enabled() bool {
	return len(c.frames) == 0 || c.frames[len(c.frames)-1].enabled
}

func (c *conditionals) inside() bool { return len(c.frames) > 0 }

// line handles an if, elif, else or endif line; it reports false for any
// other line. test evaluates a condition; it is called only for branches
// that could be taken, so a bad condition in a skipped branch is no error.
func (c *conditionals) line(text string, num int, test func(string) (bool, error)) (bool, error) {
	word, rest := keyword(text)
	switch word {
	case "if":
		if len(c.frames) >= maxIfDepth {
			return true, errors.New("if statements nested too deeply")
		}
		outer := c.enabled()
		v := false
		if outer {
			var err error
			if v, err = test(rest); err != nil {
				return true, err
			}
		}
		c.frames = append(c.frames, condFrame{line: num, enabled: v, done: v || !outer})
	case "elif":
		f, err := c.top("elif")
		if err != nil {
			return true, err
		}
		if f.done {
			f.enabled = false
			return true, nil
		}
		v, err := test(rest)
		if err != nil {
			return true, err
		}
		f.enabled, f.done = v, v
	case "else":
		f, err := c.top("else")
		if err != nil {
			return true, err
		}
		f.enabled, f.done, f.inElse = !f.done, true, true
	case "endif":
		if len(c.frames) == 0 {
			return true, errors.New("endif without matching if")
		}
		c.frames = c.frames[:len(c.frames)-1]
	default:
		return false, nil
	}
	return true, nil
}

// top returns the innermost if, for an elif or else.
func (c *conditionals) top(word string) (*condFrame, error) {
	if len(c.frames) == 0 {
		return nil, fmt.Errorf("%s without matching if", word)
	}
	f := &c.frames[len(c.frames)-1]
	if f.inElse {
		return nil, fmt.Errorf("%s is not allowed after else", word)
	}
	return f, nil
}

// keyword returns the lower-case if, elif, else or endif that starts text,
// followed by white space or nothing, and the rest; or "" for other lines.
// As in condor_submit, text after else and endif is ignored.
func keyword(text string) (word, rest string) {
	for _, w := range [...]string{"if", "elif", "else", "endif"} {
		if len(text) >= len(w) && strings.EqualFold(text[:len(w)], w) &&
			(len(text) == len(w) || isSpace(text[len(w)])) {
			return w, strings.TrimSpace(text[len(w):])
		}
	}
	return "", ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// testCondition evaluates the condition of an if or elif as condor_submit
// does: macros are expanded first (a condition that expands to nothing is
// false), a leading ! negates, and what remains must be
//
//	a number (true unless zero), true, false, yes, no, t or f;
//	defined NAME (true if the macro is defined and not empty);
//	version OP x.y[.z] with OP one of == != < <= > >= (the version of the
//	submit language, see languageVersion).
//
// Other expressions, as in condor_submit, are refused.
func testCondition(expr string, x *expander) (bool, error) {
	orig := expr
	expanded := false
	if strings.IndexByte(expr, '$') >= 0 {
		var err error
		if expr, err = x.expand(expr); err != nil {
			return false, err
		}
		expanded = true
	}
	expr = strings.Trim(expr, " \t\r\v\f")
	inverted := false
	if strings.HasPrefix(expr, "!") {
		inverted = true
		expr = strings.TrimLeft(expr[1:], " \t\r\v\f")
	}
	if expanded && expr == "" {
		return inverted, nil
	}
	v, err := evalCondition(expr, x)
	if err != nil {
		return false, fmt.Errorf("%q is not a valid condition: %w", orig, err)
	}
	return v != inverted, nil
}

// condShape is what a condition looks like.
type condShape uint8

const (
	condComplex condShape = iota
	condEmpty
	condNumber
	condBool
	condIdent
	condVersion
	condDefined
)

var (
	numberRE = regexp.MustCompile(`^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
	identRE  = regexp.MustCompile(`^[A-Za-z0-9_./]+$`)
	defRE    = regexp.MustCompile(`(?i)^defined(?:[ \t]+|$)`)
	verRE    = regexp.MustCompile(`(?i)^version(?:[^A-Za-z0-9]|$)`)
)

// shapeOf classifies a condition.
func shapeOf(expr string) condShape {
	switch {
	case expr == "":
		return condEmpty
	case numberRE.MatchString(expr):
		return condNumber
	case strings.EqualFold(expr, "true"), strings.EqualFold(expr, "false"):
		return condBool
	case defRE.MatchString(expr):
		return condDefined
	case verRE.MatchString(expr):
		return condVersion
	case identRE.MatchString(expr):
		return condIdent
	}
	return condComplex
}

// evalCondition evaluates a condition without its leading !.
func evalCondition(expr string, x *expander) (bool, error) {
	switch shapeOf(expr) {
	case condNumber:
		f, _ := strconv.ParseFloat(expr, 64)
		return f != 0, nil
	case condBool:
		return strings.EqualFold(expr, "true"), nil
	case condIdent:
		if b, ok := oldBool(expr); ok {
			return b, nil
		}
		return false, errors.New("it is neither a boolean nor a number")
	case condDefined:
		return defined(strings.TrimSpace(expr[len("defined"):]), x)
	case condVersion:
		return compareVersion(strings.TrimSpace(expr[len("version"):]))
	case condEmpty:
		return false, errors.New("it is empty")
	}
	return false, errors.New("compound conditions are not supported (use defined, version, a boolean or $(name))")
}

// oldBool reads the spellings of booleans condor_submit accepts besides
// true and false.
func oldBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "yes", "t":
		return true, true
	case "no", "f":
		return false, true
	}
	return false, false
}

// defined implements "defined NAME": true if the macro is defined and not
// empty; a number or boolean is always defined.
func defined(arg string, x *expander) (bool, error) {
	switch shapeOf(arg) {
	case condEmpty:
		return false, nil
	case condNumber, condBool:
		return true, nil
	case condIdent:
		if v, ok := x.lookup(arg); ok {
			return v != "", nil
		}
		_, isBool := oldBool(arg)
		return isBool, nil
	}
	if len(arg) > 4 && strings.EqualFold(arg[:4], "use ") {
		return false, nil // there are no submit templates
	}
	return false, fmt.Errorf("defined wants a macro name, a boolean or a number, not %q", arg)
}

// compareVersion implements "version OP x.y[.z]". As in condor_submit, a
// version without its third number takes the language's, so 24.0 == 24.0.0.
func compareVersion(s string) (bool, error) {
	negated := strings.HasPrefix(s, "!")
	if negated {
		s = s[1:]
	}
	op := 0
	if s != "" && strings.IndexByte("<=>", s[0]) >= 0 {
		op = int(s[0]) - '='
		s = s[1:]
	}
	orEqual := strings.HasPrefix(s, "=")
	if orEqual {
		s = s[1:]
	}
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	fields := strings.SplitN(s, ".", 3)
	var v [3]int
	n := 0
	for i, f := range fields {
		digits := len(f) - len(strings.TrimLeft(f, "0123456789"))
		if digits == 0 {
			break
		}
		v[i], _ = strconv.Atoi(f[:digits])
		n++
		if digits < len(f) {
			break
		}
	}
	if n < 2 || v[0] < 6 {
		return false, fmt.Errorf("%q is not a version (want x.y or x.y.z)", s)
	}
	if n < 3 {
		v[2] = languageVersion[2]
	}
	cmp := 0
	for i := range v {
		if languageVersion[i] != v[i] {
			cmp = 1
			if languageVersion[i] < v[i] {
				cmp = -1
			}
			break
		}
	}
	r := cmp == op || orEqual && cmp == 0
	return r != negated, nil
}

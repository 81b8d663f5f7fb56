package classad

import (
	"math"
	"strconv"
	"strings"
	"time"
)

func registerConversions(m map[string]builtin) {
	m["int"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return toInt(a[0]) })
	m["real"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return toReal(a[0]) })
	m["string"] = strict(1, 1, func(_ *evalCtx, a []Value) Value {
		s, ok := stringOf(a[0])
		if !ok {
			return Value{kind: ErrorKind}
		}
		return String(s)
	})
	m["bool"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return toBool(a[0]) })
	m["abstime"] = lazy(0, 2, func(c *evalCtx, a []Value) Value {
		for _, v := range a {
			if v.kind == ErrorKind {
				return v
			}
		}
		return absTimeFn(c, a)
	})
	m["reltime"] = strict(1, 1, relTimeFn)
}

// toInt converts as libclassad's int(): reals truncate toward zero,
// booleans are 0 or 1, times give their seconds and strings are read as
// C's strtod reads them (so "0x10" is 16 and "12abc" 12).
func toInt(v Value) Value {
	switch v.kind {
	case IntKind:
		return v
	case BoolKind:
		return Value{kind: IntKind, bits: v.bits}
	case RealKind:
		return Int(cInt64(v.f()))
	case RelTimeKind:
		return Int(cInt32(v.f())) // libclassad keeps relative seconds in a C int
	case AbsTimeKind:
		return Int(v.i())
	case StringKind:
		if f, ok := strtod(v.s()); ok {
			return Int(cInt64(f))
		}
	}
	return Value{kind: ErrorKind}
}

// toReal converts as libclassad's real(); strings are read as strtod
// reads them, so "INF", "NaN" and "1.5x" are numbers.
func toReal(v Value) Value {
	switch v.kind {
	case RealKind:
		return v
	case IntKind, AbsTimeKind:
		return Real(float64(v.i()))
	case BoolKind:
		return Real(float64(v.bits))
	case RelTimeKind:
		return Real(float64(cInt32(v.f())))
	case StringKind:
		if f, ok := strtod(v.s()); ok {
			return Real(f)
		}
	}
	return Value{kind: ErrorKind}
}

// strtod reads the longest prefix of s (after leading white space) that C's
// strtod accepts: a decimal or 0x hexadecimal number, inf, infinity or nan.
// ok is false if there is none.
func strtod(s string) (float64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := strings.ToLower(s[i:])
	sign := 1.0
	if neg {
		sign = -1
	}
	switch {
	case strings.HasPrefix(rest, "inf"):
		return sign * math.Inf(1), true
	case strings.HasPrefix(rest, "nan"):
		return math.NaN(), true
	case strings.HasPrefix(rest, "0x") && len(rest) > 2 && (isHexDigit(rest[2]) || rest[2] == '.' && len(rest) > 3 && isHexDigit(rest[3])):
		j := 2
		for j < len(rest) && isHexDigit(rest[j]) {
			j++
		}
		if j < len(rest) && rest[j] == '.' {
			j++
			for j < len(rest) && isHexDigit(rest[j]) {
				j++
			}
		}
		mant := rest[:j]
		exp := "p0"
		if j < len(rest) && rest[j] == 'p' {
			k := j + 1
			if k < len(rest) && (rest[k] == '+' || rest[k] == '-') {
				k++
			}
			if k < len(rest) && isDigit(rest[k]) {
				for k < len(rest) && isDigit(rest[k]) {
					k++
				}
				exp = rest[j:k]
			}
		}
		f, err := strconv.ParseFloat(mant+exp, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return sign * f, true
	}
	j := 0
	digits := 0
	for j < len(rest) && isDigit(rest[j]) {
		j++
		digits++
	}
	if j < len(rest) && rest[j] == '.' {
		j++
		for j < len(rest) && isDigit(rest[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if j < len(rest) && rest[j] == 'e' {
		k := j + 1
		if k < len(rest) && (rest[k] == '+' || rest[k] == '-') {
			k++
		}
		if k < len(rest) && isDigit(rest[k]) {
			for k < len(rest) && isDigit(rest[k]) {
				k++
			}
			j = k
		}
	}
	f, err := strconv.ParseFloat(rest[:j], 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		return 0, false
	}
	return sign * f, true
}

// toBool converts as libclassad's bool(): numbers are true if non-zero;
// the strings "true" and "false" (any case) are read and any other string
// is undefined.
func toBool(v Value) Value {
	switch v.kind {
	case BoolKind:
		return v
	case IntKind:
		return Bool(v.i() != 0)
	case RealKind:
		return Bool(v.f() != 0)
	case RelTimeKind:
		return Bool(cInt32(v.f()) != 0)
	case StringKind:
		switch {
		case equalFold(v.s(), "true"):
			return Bool(true)
		case equalFold(v.s(), "false"):
			return Bool(false)
		}
		return Value{}
	}
	return Value{kind: ErrorKind}
}

// stringOf is the text of v as string() and strcat() see it: strings as
// they are, anything else unparsed.
func stringOf(v Value) (string, bool) {
	switch v.kind {
	case StringKind:
		return v.s(), true
	case ErrorKind, UndefinedKind:
		return "", false
	case AbsTimeKind:
		return formatAbsTime(v.i(), int(v.off)), true
	case RelTimeKind:
		return formatRelTime(v.f(), false), true
	}
	p := printer{limit: maxString}
	p.value(v)
	if p.over() {
		return "", false
	}
	return p.String(), true
}

func localOffset(sec int64) int {
	_, off := time.Unix(sec, 0).Zone()
	return off
}

// absTimeFn: absTime() is now; absTime(n) is n seconds past the epoch
// and absTime(t) converts a time; an optional second argument is the zone
// offset in seconds. A string literal is read when the expression is
// parsed (absTimeLiteral); like libclassad, a string computed at run time
// comes back unchanged.
//
// libclassad keeps the seconds of a time made from a number in a C int:
// integers past 32 bits wrap and reals out of range become -2^31.
func absTimeFn(c *evalCtx, a []Value) Value {
	if len(a) == 0 {
		sec := time.Now().Unix()
		return AbsTime(sec, localOffset(sec))
	}
	if len(a) == 2 && a[1].kind != IntKind && a[1].kind != RealKind && a[1].kind != RelTimeKind {
		return Value{kind: ErrorKind}
	}
	if a[0].kind == StringKind {
		return a[0]
	}
	var sec int64
	off := -1 << 31 // not yet known
	switch v := a[0]; v.kind {
	case UndefinedKind:
		return v
	case AbsTimeKind:
		return v // libclassad ignores an offset given with a time
	case IntKind:
		sec = int64(int32(v.i()))
	case RealKind, RelTimeKind:
		sec = cInt32(v.f())
	default:
		return Value{kind: ErrorKind}
	}
	switch {
	case len(a) == 2:
		if a[1].kind == IntKind {
			off = int(int32(a[1].i())) // C ints, as in libclassad
		} else {
			off = int(cInt32(a[1].f()))
		}
		if off == -1 && a[0].kind == IntKind {
			// libclassad takes -1 for a failure here and fails the
			// whole evaluation.
			if c != nil {
				c.aborted = true
			}
			return Value{kind: ErrorKind}
		}
	case off == -1<<31:
		off = localOffset(sec)
	}
	return AbsTime(sec, off)
}

// relTimeFn: relTime(n) is n seconds and relTime(t) converts a time. A
// string literal is read when the expression is parsed (relTimeLiteral);
// like libclassad, a string computed at run time gives zero seconds.
func relTimeFn(_ *evalCtx, a []Value) Value {
	switch v := a[0]; v.kind {
	case RelTimeKind:
		return v
	case AbsTimeKind:
		return RelTime(float64(v.i()))
	case IntKind:
		return RelTime(float64(int32(v.i()))) // a C int, as in libclassad
	case RealKind:
		return RelTime(v.f())
	case StringKind:
		return RelTime(0)
	}
	return Value{kind: ErrorKind}
}

// timeLiteral is what libclassad's parser makes of absTime("...") and
// relTime("...") with a constant string: an absolute time, or for relTime
// a real number of seconds. ok is false if the string does not read.
func timeLiteral(name string, s string) (v Value, ok bool) {
	if equalFold(name, "absTime") {
		sec, off, ok := parseAbsTime(s, time.Local)
		return AbsTime(sec, off), ok
	}
	f, ok := parseRelTime(s)
	return Real(f), ok
}

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
	m["abstime"] = strict(0, 2, absTimeFn)
	m["reltime"] = strict(0, 1, relTimeFn)
}

// toInt converts as HTCondor's int(): reals truncate toward zero, booleans
// are 0 or 1, strings are parsed, times give their seconds.
func toInt(v Value) Value {
	switch v.kind {
	case IntKind:
		return v
	case BoolKind:
		return Value{kind: IntKind, bits: v.bits}
	case RealKind, RelTimeKind:
		f := math.Trunc(v.f())
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return Value{kind: ErrorKind}
		}
		return Int(int64(f))
	case AbsTimeKind:
		return Int(v.i())
	case StringKind:
		s := strings.TrimSpace(v.s())
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return Int(i)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return toInt(Real(f))
		}
	}
	return Value{kind: ErrorKind}
}

// toReal converts as HTCondor's real(); "INF", "-INF" and "NaN" are accepted.
func toReal(v Value) Value {
	switch v.kind {
	case RealKind:
		return v
	case IntKind, AbsTimeKind:
		return Real(float64(v.i()))
	case BoolKind:
		return Real(float64(v.bits))
	case RelTimeKind:
		return Real(v.f())
	case StringKind:
		s := strings.TrimSpace(v.s())
		if f, err := strconv.ParseFloat(s, 64); err == nil || math.IsInf(f, 0) && s != "" {
			return Real(f)
		}
	}
	return Value{kind: ErrorKind}
}

// toBool converts as HTCondor's bool(): numbers are true if non-zero,
// strings "true" and "false" (any case) are read.
func toBool(v Value) Value {
	switch v.kind {
	case BoolKind:
		return v
	case IntKind:
		return Bool(v.i() != 0)
	case RealKind:
		return Bool(v.f() != 0)
	case StringKind:
		switch {
		case equalFold(strings.TrimSpace(v.s()), "true"):
			return Bool(true)
		case equalFold(strings.TrimSpace(v.s()), "false"):
			return Bool(false)
		}
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

// absTimeFn: absTime() is now; absTime(n) is n seconds past the epoch;
// absTime("ISO 8601") parses; an optional second argument is the zone offset.
func absTimeFn(_ *evalCtx, a []Value) Value {
	if len(a) == 0 {
		sec := time.Now().Unix()
		return AbsTime(sec, localOffset(sec))
	}
	var sec int64
	off := 0
	switch v := a[0]; v.kind {
	case AbsTimeKind:
		sec, off = v.i(), int(v.off)
	case StringKind:
		var ok bool
		sec, off, ok = parseAbsTime(v.s(), time.Local)
		if !ok {
			return Value{kind: ErrorKind}
		}
	case IntKind, RealKind:
		i := toInt(v)
		if i.kind != IntKind {
			return i
		}
		sec, off = i.i(), localOffset(i.i())
	default:
		return Value{kind: ErrorKind}
	}
	if len(a) == 2 {
		o := toInt(a[1])
		if o.kind != IntKind || a[1].kind == StringKind || o.i() < -86400 || o.i() > 86400 {
			return Value{kind: ErrorKind}
		}
		off = int(o.i())
	}
	return AbsTime(sec, off)
}

// relTimeFn: relTime(n) is n seconds; relTime("1+02:03:04") parses.
func relTimeFn(_ *evalCtx, a []Value) Value {
	if len(a) == 0 {
		return RelTime(0)
	}
	switch v := a[0]; v.kind {
	case RelTimeKind:
		return v
	case IntKind, RealKind:
		f, _ := toFloat(v)
		return RelTime(f)
	case StringKind:
		if f, ok := parseRelTime(v.s()); ok {
			return RelTime(f)
		}
	}
	return Value{kind: ErrorKind}
}

package classad

import (
	"math"
	"math/big"
	"math/rand/v2"
)

func registerLists(m map[string]builtin) {
	m["member"] = undefFirst(2, 2, func(_ *evalCtx, a []Value) Value { return member(a, opEq) })
	m["identicalmember"] = lazy(2, 2, func(_ *evalCtx, a []Value) Value { return member(a, opMetaEq) })
	m["sum"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "sum") })
	m["avg"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "avg") })
	m["min"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "min") })
	m["max"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "max") })
	m["anycompare"] = lazy(3, 3, func(_ *evalCtx, a []Value) Value { return listCompare(a, true) })
	m["allcompare"] = lazy(3, 3, func(_ *evalCtx, a []Value) Value { return listCompare(a, false) })
}

// member reports whether the scalar a[0] equals (by o) an element of the
// list a[1]. Elements that do not compare (a type mismatch) are skipped.
func member(a []Value, o op) Value {
	x, l := a[0], a[1]
	if l.kind != ListKind || x.kind == ListKind || x.kind == AdKind {
		if o == opMetaEq && l.kind == UndefinedKind {
			return Value{}
		}
		return Value{kind: ErrorKind}
	}
	if o == opEq && x.kind == ErrorKind {
		return x
	}
	for _, e := range l.elems() {
		if binaryOp(o, x, e).IsTrue() {
			return Bool(true)
		}
	}
	return Bool(false)
}

// listFold computes sum, avg, min or max of a list of numbers (booleans
// count as integers). Undefined elements are skipped; any other
// non-number makes the result error. With nothing left, sum and avg are 0
// and min and max undefined.
func listFold(l Value, how string) Value {
	if l.kind != ListKind {
		return Value{kind: ErrorKind}
	}
	acc := Value{}
	n := 0
	widest := BoolKind // of the elements, for min and max
	for _, e := range l.elems() {
		if (e.kind == IntKind || e.kind == RealKind) && e.kind > widest {
			widest = e.kind
		}
		switch e.kind {
		case UndefinedKind:
			continue
		case IntKind, RealKind:
		case BoolKind:
			// A lone boolean sums to itself, as in libclassad; with
			// others it counts as an integer.
			if acc.kind != UndefinedKind {
				e = Value{kind: IntKind, bits: e.bits}
			}
		default:
			return Value{kind: ErrorKind}
		}
		n++
		if acc.kind == UndefinedKind {
			acc = e
			continue
		}
		switch how {
		case "sum", "avg":
			acc, _ = numeric(acc)
			if acc = arith(opAdd, acc, e); acc.kind == ErrorKind {
				return acc // the sum passed the largest real
			}
		case "min":
			if compareOp(opLt, e, acc).IsTrue() {
				acc = e
			}
		case "max":
			if compareOp(opGt, e, acc).IsTrue() {
				acc = e
			}
		}
	}
	if n == 0 && (how == "sum" || how == "avg") {
		return Int(0)
	}
	if how == "avg" {
		f, _ := toFloat(acc)
		return arith(opDiv, Real(f), Real(float64(n))) // +Inf is error, as in arithmetic
	}
	if how == "min" || how == "max" {
		// libclassad gives the kind of the widest element.
		switch {
		case widest == RealKind:
			return toReal(acc)
		case (widest == IntKind || n > 1) && acc.kind == BoolKind:
			return Value{kind: IntKind, bits: acc.bits}
		}
	}
	return acc
}

var compareOps = map[string]op{
	"<": opLt, "<=": opLe, "==": opEq, "!=": opNe, ">": opGt, ">=": opGe,
	"is": opIs, "isnt": opIsnt, // libclassad has no =?= or =!= here
}

// listCompare implements anyCompare(op, list, v) and allCompare. The
// operator must be a string naming a comparison; an undefined list makes
// the result undefined and any other non-list error. Elements are compared
// in order: an error comparison makes the result error, an undefined one
// false.
func listCompare(a []Value, any bool) Value {
	switch a[0].kind {
	case StringKind:
	case UndefinedKind:
		return Value{}
	default:
		return Value{kind: ErrorKind}
	}
	o, ok := compareOps[a[0].s()] // names as written: "IS" is error
	if !ok {
		return Value{kind: ErrorKind}
	}
	switch a[1].kind {
	case ListKind:
	case UndefinedKind:
		return Value{}
	default:
		return Value{kind: ErrorKind}
	}
	for _, e := range a[1].elems() {
		r := binaryOp(o, e, a[2])
		switch r.kind {
		case ErrorKind:
			return r
		case UndefinedKind:
			return Bool(false) // an undefined comparison ends the walk, as in libclassad
		}
		if r.IsTrue() == any {
			return Bool(any)
		}
	}
	return Bool(!any)
}

func registerMath(m map[string]builtin) {
	m["floor"] = numeric1(func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.Floor) })
	m["ceiling"] = numeric1(func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.Ceil) })
	m["ceil"] = m["ceiling"]
	m["round"] = numeric1(func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.RoundToEven) })
	m["pow"] = errorStrict(2, 2, pow)
	m["quantize"] = errorStrict(2, 2, quantize)
	m["random"] = errorStrict(0, 1, random)
}

// numeric1 is errorStrict for the one-argument rounding functions.
func numeric1(f func(c *evalCtx, a []Value) Value) builtin { return errorStrict(1, 1, f) }

// errorStrict wraps f like strict, except that an undefined argument
// makes the result error: libclassad's math functions do not pass
// undefined through.
func errorStrict(lo, hi int, f func(c *evalCtx, args []Value) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		if len(args) < lo || hi >= 0 && len(args) > hi {
			return Value{kind: ErrorKind}
		}
		var buf [4]Value
		vs := evalArgs(c, s, args, buf[:0])
		for _, v := range vs {
			if v.kind == ErrorKind || v.kind == UndefinedKind {
				return Value{kind: ErrorKind}
			}
		}
		return f(c, vs)
	}
}

// rounding applies f to a number and returns an integer. Strings are read
// with strtod, booleans and times count as numbers, as in libclassad.
func rounding(v Value, f func(float64) float64) Value {
	switch v.kind {
	case IntKind:
		return v
	case AbsTimeKind:
		return Int(v.i())
	case RelTimeKind:
		return Int(cInt32(v.f()))
	}
	x, ok := mathArg(v)
	if !ok {
		return Value{kind: ErrorKind}
	}
	if v.kind == BoolKind {
		return Int(int64(x))
	}
	return Int(cInt64(f(x)))
}

// mathArg converts an argument of the math builtins to a real: numbers,
// booleans, times and strings that strtod reads.
func mathArg(v Value) (float64, bool) {
	switch v.kind {
	case IntKind, AbsTimeKind:
		return float64(v.i()), true
	case BoolKind:
		return float64(v.bits), true
	case RealKind:
		return v.f(), true
	case RelTimeKind:
		return float64(cInt32(v.f())), true
	case StringKind:
		return strtod(v.s())
	}
	return 0, false
}

// pow: an integer to a non-negative integer power is an integer (computed
// in floating point and converted, as libclassad does); anything else
// convertible is real.
func pow(_ *evalCtx, a []Value) Value {
	x, ok1 := mathArg(a[0])
	y, ok2 := mathArg(a[1])
	if !ok1 || !ok2 {
		return Value{kind: ErrorKind}
	}
	if a[0].kind == IntKind && a[1].kind == IntKind && a[1].i() >= 0 {
		// libclassad rounds by adding a half and truncating, so that
		// pow(-2, 3) is -7.
		return Int(cInt64(powRounded(x, y) + 0.5))
	}
	return Real(powRounded(x, y))
}

// powRounded is math.Pow, correctly rounded for whole exponents up to
// 4096 as the C library's pow is; Go's Pow can be a unit in the last
// place off there.
func powRounded(x, y float64) float64 {
	half := y-math.Trunc(y) == 0.5 || y-math.Trunc(y) == -0.5
	if x > 0 && x < 0x1p-1022 && y != math.Trunc(y) && !half {
		// Go's Pow and Log go wrong on subnormals; take the exponent apart.
		fr, e := math.Frexp(x)
		return math.Pow(fr, y) * math.Exp2(float64(e)*y)
	}
	if y != math.Trunc(y) && !(half && x > 0) || math.Abs(y) > 4096 || x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		if r := math.Pow(x, y); !math.IsNaN(r) || math.IsNaN(x) || math.IsNaN(y) {
			return r
		}
		return math.Copysign(math.NaN(), -1) // an invalid power: the C library's NaN has its sign set
	}
	n := int(math.Abs(y))
	acc := new(big.Float).SetPrec(256).SetInt64(1)
	if half {
		// x^(n+1/2) is x^n times the square root, both to 256 bits so
		// that the result is rounded once.
		acc.Sqrt(new(big.Float).SetPrec(256).SetFloat64(x))
	}
	base := new(big.Float).SetPrec(256).SetFloat64(x)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			acc.Mul(acc, base)
		}
		base.Mul(base, base)
	}
	if y < 0 {
		acc.Quo(new(big.Float).SetPrec(256).SetInt64(1), acc)
	}
	f, _ := acc.Float64()
	return f
}

// quantize(a, b): a rounded up to a multiple of b; with a list b, the first
// element at least a, or if none, a rounded up to a multiple of the last.
func quantize(_ *evalCtx, a []Value) Value {
	x, q := a[0], a[1]
	if x.kind != IntKind {
		f, ok := mathArg(x)
		if !ok {
			return Value{kind: ErrorKind}
		}
		x = Real(f)
	}
	if q.kind == ListKind {
		elems := q.elems()
		if len(elems) == 0 {
			return a[0] // unchanged, as libclassad gives it
		}
		xf, _ := toFloat(x)
		for _, e := range elems {
			ef, ok := mathArg(e)
			if !ok {
				return Value{kind: ErrorKind}
			}
			if ef >= xf {
				return e
			}
		}
		q = elems[len(elems)-1]
	}
	switch {
	case x.kind == IntKind && q.kind == IntKind:
		if q.i() == 0 {
			return a[0]
		}
		// libclassad's (a + q - 1) / q * q, in wrapping C integers.
		n, d := x.i(), q.i()
		return Int((n + d - 1) / d * d)
	default:
		qf, ok := mathArg(q)
		if !ok {
			return Value{kind: ErrorKind}
		}
		xf, _ := toFloat(x)
		if math.Abs(qf) <= 1e-8 {
			return a[0] // libclassad gives its argument back for so small a quantum
		}
		return Real(math.Ceil(xf/qf) * qf)
	}
}

// random() is a real in [0,1); random(n) an integer in [0,n) or a real in
// [0,x) for a real x.
func random(_ *evalCtx, a []Value) Value {
	if len(a) == 0 {
		return Real(rand.Float64())
	}
	switch v := a[0]; v.kind {
	case IntKind:
		if v.i() <= 0 {
			return Value{kind: ErrorKind}
		}
		return Int(rand.Int64N(v.i()))
	case RealKind:
		return Real(rand.Float64() * v.f())
	}
	return Value{kind: ErrorKind}
}

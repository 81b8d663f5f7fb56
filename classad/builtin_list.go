package classad

import (
	"math"
	"math/rand/v2"
)

func registerLists(m map[string]builtin) {
	m["member"] = strict(2, 2, func(_ *evalCtx, a []Value) Value { return member(a, opEq) })
	m["identicalmember"] = lazy(2, 2, func(_ *evalCtx, a []Value) Value { return member(a, opMetaEq) })
	m["ismember"] = m["identicalmember"] // the thesis' name
	m["sum"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "sum") })
	m["avg"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "avg") })
	m["min"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "min") })
	m["max"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return listFold(a[0], "max") })
	m["anycompare"] = strict(3, 3, func(_ *evalCtx, a []Value) Value { return listCompare(a, true) })
	m["allcompare"] = strict(3, 3, func(_ *evalCtx, a []Value) Value { return listCompare(a, false) })
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

// listFold computes sum, avg, min or max of a list of numbers. An empty
// list sums to 0 and has undefined min and max; a non-number is error and
// an undefined element makes the result undefined.
func listFold(l Value, how string) Value {
	if l.kind != ListKind {
		return Value{kind: ErrorKind}
	}
	elems := l.elems()
	if len(elems) == 0 {
		switch how {
		case "sum":
			return Int(0)
		case "avg":
			return Real(0)
		}
		return Value{}
	}
	acc := Value{}
	for _, e := range elems {
		switch e.kind {
		case UndefinedKind:
			return Value{}
		case IntKind, RealKind:
		case BoolKind:
			e = Value{kind: IntKind, bits: e.bits}
		default:
			return Value{kind: ErrorKind}
		}
		if acc.kind == UndefinedKind {
			acc = e
			continue
		}
		switch how {
		case "sum", "avg":
			acc = arith(opAdd, acc, e)
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
	if how == "avg" {
		f, _ := toFloat(acc)
		return Real(f / float64(len(elems)))
	}
	return acc
}

var compareOps = map[string]op{
	"<": opLt, "<=": opLe, "==": opEq, "!=": opNe, ">": opGt, ">=": opGe,
	"=?=": opMetaEq, "=!=": opMetaNe, "is": opIs, "isnt": opIsnt,
}

// listCompare implements anyCompare(op, list, v) and allCompare.
func listCompare(a []Value, any bool) Value {
	if a[0].kind != StringKind || a[1].kind != ListKind {
		return Value{kind: ErrorKind}
	}
	o, ok := compareOps[a[0].s()]
	if !ok {
		for k, v := range compareOps {
			if equalFold(k, a[0].s()) {
				o, ok = v, true
			}
		}
		if !ok {
			return Value{kind: ErrorKind}
		}
	}
	for _, e := range a[1].elems() {
		if binaryOp(o, e, a[2]).IsTrue() == any {
			return Bool(any)
		}
	}
	return Bool(!any)
}

func registerMath(m map[string]builtin) {
	m["floor"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.Floor) })
	m["ceiling"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.Ceil) })
	m["ceil"] = m["ceiling"]
	m["round"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return rounding(a[0], math.RoundToEven) })
	m["pow"] = strict(2, 2, pow)
	m["quantize"] = strict(2, 2, quantize)
	m["random"] = strict(0, 1, random)
}

// rounding applies f to a number and returns an integer; strings are
// converted first, as HTCondor does.
func rounding(v Value, f func(float64) float64) Value {
	switch v.kind {
	case IntKind:
		return v
	case StringKind, BoolKind:
		v = toReal(v)
		if v.kind != RealKind {
			return v
		}
	case RealKind:
	default:
		return Value{kind: ErrorKind}
	}
	return toInt(Real(f(v.f())))
}

// pow: an integer to a non-negative integer power is an integer; otherwise real.
func pow(_ *evalCtx, a []Value) Value {
	b, e := a[0], a[1]
	if b.kind == IntKind && e.kind == IntKind && e.i() >= 0 {
		r, x, n := int64(1), b.i(), e.i()
		for n > 0 {
			if n&1 == 1 {
				r *= x
			}
			x *= x
			n >>= 1
		}
		return Int(r)
	}
	x, ok1 := toFloat(b)
	y, ok2 := toFloat(e)
	if !ok1 || !ok2 || b.kind == BoolKind || e.kind == BoolKind {
		return Value{kind: ErrorKind}
	}
	return Real(math.Pow(x, y))
}

// quantize(a, b): a rounded up to a multiple of b; with a list b, the first
// element at least a, or if none, a rounded up to a multiple of the last.
func quantize(_ *evalCtx, a []Value) Value {
	x, q := a[0], a[1]
	if x.kind != IntKind && x.kind != RealKind {
		return Value{kind: ErrorKind}
	}
	if q.kind == ListKind {
		elems := q.elems()
		if len(elems) == 0 {
			return Value{kind: ErrorKind}
		}
		for _, e := range elems {
			if e.kind != IntKind && e.kind != RealKind {
				return Value{kind: ErrorKind}
			}
			if compareOp(opGe, e, x).IsTrue() {
				return e
			}
		}
		q = elems[len(elems)-1]
	}
	switch {
	case x.kind == IntKind && q.kind == IntKind:
		if q.i() == 0 {
			return Value{kind: ErrorKind}
		}
		return Int(quantizeInt(x.i(), q.i()))
	case q.kind == IntKind || q.kind == RealKind:
		xf, _ := toFloat(x)
		qf, _ := toFloat(q)
		if qf == 0 {
			return Value{kind: ErrorKind}
		}
		return Real(math.Ceil(xf/qf) * qf)
	}
	return Value{kind: ErrorKind}
}

// quantizeInt is ceil(n/d)*d in integers.
func quantizeInt(n, d int64) int64 {
	q := n / d
	if n%d != 0 && (n < 0) == (d < 0) {
		q++
	}
	return q * d
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

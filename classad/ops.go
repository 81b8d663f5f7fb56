package classad

import (
	"math"
)

// truthKind classifies a value used as a condition.
type truthKind uint8

const (
	truthBool truthKind = iota
	truthUndefined
	truthError
)

// truth converts v for &&, ||, ! and ?:. Like libclassad's
// IsBooleanValueEquiv, numbers count as booleans (non-zero is true); any
// other kind is error.
func truth(v Value) (bool, truthKind) {
	switch v.kind {
	case BoolKind:
		return v.b(), truthBool
	case IntKind:
		return v.i() != 0, truthBool
	case RealKind:
		return v.f() != 0, truthBool
	case UndefinedKind:
		return false, truthUndefined
	}
	return false, truthError
}

// evalAnd follows libclassad: false on the left decides without evaluating
// the right (so false && error is false); otherwise false on either side
// wins over undefined, and error over everything.
func evalAnd(c *evalCtx, s *adRef, l, r node) Value {
	lb, ls := truth(l.eval(c, s))
	if ls == truthError {
		return Value{kind: ErrorKind}
	}
	if ls == truthBool && !lb {
		return Value{kind: BoolKind}
	}
	rb, rs := truth(r.eval(c, s))
	switch {
	case rs == truthError:
		return Value{kind: ErrorKind}
	case rs == truthBool && !rb:
		return Value{kind: BoolKind}
	case ls == truthUndefined || rs == truthUndefined:
		return Value{}
	}
	return Value{kind: BoolKind, bits: 1}
}

// evalOr is the dual of evalAnd: true on the left decides.
func evalOr(c *evalCtx, s *adRef, l, r node) Value {
	lb, ls := truth(l.eval(c, s))
	if ls == truthError {
		return Value{kind: ErrorKind}
	}
	if ls == truthBool && lb {
		return Value{kind: BoolKind, bits: 1}
	}
	rb, rs := truth(r.eval(c, s))
	switch {
	case rs == truthError:
		return Value{kind: ErrorKind}
	case rs == truthBool && rb:
		return Value{kind: BoolKind, bits: 1}
	case ls == truthUndefined || rs == truthUndefined:
		return Value{}
	}
	return Value{kind: BoolKind}
}

func unaryOp(o op, v Value) Value {
	if v.kind == ErrorKind || v.kind == UndefinedKind {
		return v
	}
	switch o {
	case opNot:
		b, st := truth(v)
		if st != truthBool {
			return Value{kind: ErrorKind}
		}
		return Bool(!b)
	case opNeg:
		switch v.kind {
		case IntKind:
			return Int(-v.i())
		case RealKind:
			return Real(-v.f())
		case RelTimeKind:
			return RelTime(-v.f())
		}
	case opPlus:
		switch v.kind {
		case IntKind, RealKind, RelTimeKind:
			return v
		}
	case opBitNot:
		if v.kind == IntKind {
			return Int(^v.i())
		}
	}
	return Value{kind: ErrorKind}
}

// binaryOp applies a strict binary operator (everything but && and ||).
func binaryOp(o op, l, r Value) Value {
	switch o {
	case opMetaEq, opIs:
		return metaEq(l, r, false)
	case opMetaNe, opIsnt:
		return metaEq(l, r, true)
	}
	if l.kind == ErrorKind || r.kind == ErrorKind {
		return Value{kind: ErrorKind}
	}
	if l.kind == UndefinedKind || r.kind == UndefinedKind {
		return Value{}
	}
	switch o {
	case opEq, opNe, opLt, opLe, opGt, opGe:
		return compareOp(o, l, r)
	case opBitAnd, opBitOr, opBitXor, opShl, opShr, opUshr:
		return bitOp(o, l, r)
	}
	return arith(o, l, r)
}

// numeric promotes booleans to integers, as libclassad's coerceToNumber.
func numeric(v Value) (Value, bool) {
	switch v.kind {
	case IntKind, RealKind:
		return v, true
	case BoolKind:
		return Value{kind: IntKind, bits: v.bits}, true
	}
	return v, false
}

func arith(o op, l, r Value) Value {
	if l.kind == AbsTimeKind || l.kind == RelTimeKind || r.kind == AbsTimeKind || r.kind == RelTimeKind {
		return timeArith(o, l, r)
	}
	l, lok := numeric(l)
	r, rok := numeric(r)
	if !lok || !rok {
		return Value{kind: ErrorKind}
	}
	if l.kind == IntKind && r.kind == IntKind {
		a, b := l.i(), r.i()
		switch o {
		case opAdd:
			return Int(a + b)
		case opSub:
			return Int(a - b)
		case opMul:
			return Int(a * b)
		case opDiv:
			switch b {
			case 0:
				return Value{kind: ErrorKind}
			case -1:
				if a == math.MinInt64 {
					return Int(math.MaxInt64) // as libclassad, which avoids the trap
				}
			}
			return Int(a / b) // truncates toward zero
		case opMod:
			if b == 0 {
				return Value{kind: ErrorKind}
			}
			return Int(a % b)
		}
		return Value{kind: ErrorKind}
	}
	a, _ := toFloat(l)
	b, _ := toFloat(r)
	var f float64
	switch o {
	case opAdd:
		f = a + b
	case opSub:
		f = a - b
	case opMul:
		f = a * b
	case opDiv:
		f = a / b
	default: // % is for integers only
		return Value{kind: ErrorKind}
	}
	// libclassad lets -Inf and NaN through (-1/0.0, 0/0.0) but makes +Inf
	// error (1/0.0, 1e300*1e300).
	if math.IsInf(f, 1) {
		return Value{kind: ErrorKind}
	}
	return Real(f)
}

// timeArith: abs ± rel is abs, abs - abs is rel, rel ± rel is rel, and a
// rel may be scaled by a number.
func timeArith(o op, l, r Value) Value {
	lk, rk := l.kind, r.kind
	switch {
	case lk == AbsTimeKind && rk == RelTimeKind && (o == opAdd || o == opSub):
		d := cInt32(r.f()) // a C int, as in libclassad
		if o == opSub {
			d = -d
		}
		return Value{kind: AbsTimeKind, bits: uint64(l.i() + d), off: l.off}
	case lk == RelTimeKind && rk == AbsTimeKind && o == opAdd:
		return Value{kind: AbsTimeKind, bits: uint64(r.i() + cInt32(l.f())), off: r.off}
	case lk == AbsTimeKind && rk == AbsTimeKind && o == opSub:
		return RelTime(float64(l.i() - r.i()))
	case lk == RelTimeKind && rk == RelTimeKind && (o == opAdd || o == opSub):
		if o == opAdd {
			return RelTime(l.f() + r.f())
		}
		return RelTime(l.f() - r.f())
	case lk == RelTimeKind && (o == opMul || o == opDiv):
		n, ok := toFloat(r)
		if !ok || r.kind == BoolKind {
			return Value{kind: ErrorKind}
		}
		if o == opMul {
			return RelTime(l.f() * n)
		}
		return RelTime(l.f() / n)
	case rk == RelTimeKind && o == opMul:
		n, ok := toFloat(l)
		if !ok || l.kind == BoolKind {
			return Value{kind: ErrorKind}
		}
		return RelTime(n * r.f())
	}
	return Value{kind: ErrorKind}
}

func bitOp(o op, l, r Value) Value {
	if l.kind != IntKind || r.kind != IntKind {
		return Value{kind: ErrorKind}
	}
	a, b := l.i(), r.i()
	switch o {
	case opBitAnd:
		return Int(a & b)
	case opBitOr:
		return Int(a | b)
	case opBitXor:
		return Int(a ^ b)
	case opShl:
		return Int(a << (uint64(b) & 63))
	case opShr:
		// What libclassad's shift comes to on x86: the count is taken
		// modulo 64, but a negative number is left alone by a negative
		// count and goes to -1 past 63.
		switch {
		case a >= 0:
			return Int(a >> (uint64(b) & 63))
		case b < 0:
			return Int(a)
		case b > 63:
			return Int(-1)
		}
		return Int(a >> uint64(b))
	case opUshr:
		if a >= 0 {
			return Int(a >> (uint64(b) & 63))
		}
		// libclassad shifts arithmetically and masks off the sign copies
		// with -1 << (64 - b), both counts taken modulo 64 as x86 does; a
		// count that is a multiple of 64 so masks off everything.
		return Int(a >> (uint64(b) & 63) &^ (-1 << (uint64(64-b) & 63)))
	}
	return Value{kind: ErrorKind}
}

// compareFold compares ASCII strings ignoring case, like strcasecmp.
func compareFold(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// compareOp applies == != < <= > >= to defined operands. Strings compare
// ignoring case; numbers (booleans promoted) compare by value; times compare
// with times of their own kind; anything else is error.
func compareOp(o op, l, r Value) Value {
	var cmp int
	switch {
	case l.kind == StringKind && r.kind == StringKind:
		if o == opEq || o == opNe {
			eq := equalFold(l.s(), r.s())
			return Bool(eq == (o == opEq))
		}
		cmp = compareFold(l.s(), r.s())
	case l.kind == AbsTimeKind && r.kind == AbsTimeKind:
		cmp = cmpInt(l.i(), r.i())
	case l.kind == RelTimeKind && r.kind == RelTimeKind:
		return cmpFloatOp(o, l.f(), r.f())
	default:
		l, lok := numeric(l)
		r, rok := numeric(r)
		if !lok || !rok {
			return Value{kind: ErrorKind}
		}
		if l.kind == IntKind && r.kind == IntKind {
			cmp = cmpInt(l.i(), r.i())
		} else {
			a, _ := toFloat(l)
			b, _ := toFloat(r)
			return cmpFloatOp(o, a, b)
		}
	}
	switch o {
	case opEq:
		return Bool(cmp == 0)
	case opNe:
		return Bool(cmp != 0)
	case opLt:
		return Bool(cmp < 0)
	case opLe:
		return Bool(cmp <= 0)
	case opGt:
		return Bool(cmp > 0)
	}
	return Bool(cmp >= 0)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloatOp(o op, a, b float64) Value {
	switch o {
	case opEq:
		return Bool(a == b)
	case opNe:
		return Bool(a != b)
	case opLt:
		return Bool(a < b)
	case opLe:
		return Bool(a <= b)
	case opGt:
		return Bool(a > b)
	}
	return Bool(a >= b)
}

// identical implements =?= and is: same kind and same value, strings
// compared case-sensitively; never undefined. libclassad does not compare
// two lists, or two ads, this way: there the operators give error.
func identical(l, r Value) bool {
	budget := maxSteps
	return identicalWithin(l, r, &budget)
}

// metaEq applies =?= (or =!= when ne) as libclassad does.
func metaEq(l, r Value, ne bool) Value {
	if l.kind == r.kind && (l.kind == ListKind || l.kind == AdKind) {
		return Value{kind: ErrorKind}
	}
	return Bool(identical(l, r) != ne)
}

// identicalWithin compares at most *budget list elements: lists that share
// sublists can be exponentially large when unfolded, and past the budget
// they count as different.
func identicalWithin(l, r Value, budget *int) bool {
	*budget--
	if *budget < 0 || l.kind != r.kind {
		return false
	}
	switch l.kind {
	case UndefinedKind, ErrorKind:
		return true
	case BoolKind, IntKind:
		return l.bits == r.bits
	case RealKind, RelTimeKind:
		return l.f() == r.f() // NaN is not identical to itself
	case StringKind:
		return l.s() == r.s()
	case AbsTimeKind:
		return l.bits == r.bits
	case ListKind:
		if l.ptr == r.ptr {
			return true
		}
		a, b := l.elems(), r.elems()
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !identicalWithin(a[i], b[i], budget) {
				return false
			}
		}
		return true
	case AdKind:
		return sameAd(l.scope().ad, r.scope().ad)
	}
	return false
}

// sameAd reports whether two ads bind the same names to the same expressions.
func sameAd(a, b *ClassAd) bool {
	if a == b {
		return true
	}
	if a.Len() != b.Len() {
		return false
	}
	for _, at := range a.attrs {
		i := b.find(at.name, hashName(at.name))
		if i < 0 || at.expr.String() != b.attrs[i].expr.String() {
			return false
		}
	}
	return true
}

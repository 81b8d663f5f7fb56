package classad

import (
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of value. The zero Value is undefined.
const (
	UndefinedKind Kind = iota
	ErrorKind
	BoolKind
	IntKind
	RealKind
	StringKind
	ListKind
	AdKind
	AbsTimeKind
	RelTimeKind
)

var kindNames = [...]string{"undefined", "error", "boolean", "integer", "real", "string", "list", "classad", "abstime", "reltime"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the result of evaluating an expression. Scalars are held inline, so
// building and copying them never allocates. Values are immutable; the zero
// Value is undefined.
//
// A Value is three words: the payload of a string, list or ClassAd sits
// behind ptr (for strings, bits holds the length), which keeps the values
// the evaluator passes around small.
type Value struct {
	kind Kind
	off  int32          // AbsTime: zone offset in seconds east of UTC
	bits uint64         // Bool, Int, AbsTime seconds: int64; Real, RelTime: float64 bits; String: length
	ptr  unsafe.Pointer // String: first byte; List: *listValue; Ad: *adRef
}

// listValue is the payload of a list Value. A list written in an
// expression keeps its element expressions in src: libclassad's list
// values hold expressions, and print as them ({ a + 1 }, not { 2 }).
type listValue struct {
	elems []Value
	src   []node
	// failed records that an element's evaluation failed outright (see
	// evalCtx.aborted); selecting from the list then gives undefined.
	failed bool
}

// Undefined returns the undefined value.
func Undefined() Value { return Value{} }

// Error returns the error value.
func Error() Value { return Value{kind: ErrorKind} }

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: IntKind, bits: uint64(i)} }

// Real returns a real value.
func Real(f float64) Value { return Value{kind: RealKind, bits: math.Float64bits(f)} }

// String returns a string value.
func String(s string) Value {
	return Value{kind: StringKind, bits: uint64(len(s)), ptr: unsafe.Pointer(unsafe.StringData(s))}
}

// Bool returns a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: BoolKind, bits: 1}
	}
	return Value{kind: BoolKind}
}

// List returns a list value holding vs. The slice is copied.
func List(vs ...Value) Value {
	return listOf(append([]Value(nil), vs...))
}

// listOf wraps vs without copying; the caller gives up vs.
func listOf(vs []Value) Value {
	return Value{kind: ListKind, ptr: unsafe.Pointer(&listValue{elems: vs})}
}

func adValue(r *adRef) Value { return Value{kind: AdKind, ptr: unsafe.Pointer(r)} }

// AdValue returns a value holding ad as a top-level ClassAd. The value shares
// ad; later changes to ad are visible through it.
func AdValue(ad *ClassAd) Value {
	if ad == nil {
		return Undefined()
	}
	return adValue(ad.root())
}

// AbsTime returns an absolute time: sec seconds since the Unix epoch, shown in
// a zone offset seconds east of UTC.
func AbsTime(sec int64, offset int) Value {
	return Value{kind: AbsTimeKind, bits: uint64(sec), off: int32(offset)}
}

// RelTime returns a relative time of sec seconds (may be negative or fractional).
func RelTime(sec float64) Value { return Value{kind: RelTimeKind, bits: math.Float64bits(sec)} }

// Kind reports the type of v.
func (v Value) Kind() Kind { return v.kind }

// IsTrue reports whether v is exactly the boolean true.
func (v Value) IsTrue() bool { return v.kind == BoolKind && v.bits != 0 }

// IsUndefined reports whether v is undefined.
func (v Value) IsUndefined() bool { return v.kind == UndefinedKind }

// IsError reports whether v is the error value.
func (v Value) IsError() bool { return v.kind == ErrorKind }

// BoolValue returns the boolean held by v; ok is false for any other kind.
func (v Value) BoolValue() (b, ok bool) {
	if v.kind != BoolKind {
		return false, false
	}
	return v.bits != 0, true
}

// IntValue returns v as an integer. Reals are truncated toward zero (ok is
// false if they are out of range or NaN); other kinds give ok == false.
func (v Value) IntValue() (int64, bool) {
	switch v.kind {
	case IntKind:
		return int64(v.bits), true
	case RealKind:
		f := math.Trunc(math.Float64frombits(v.bits))
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// RealValue returns v as a real; it accepts integers and reals.
func (v Value) RealValue() (float64, bool) {
	switch v.kind {
	case IntKind:
		return float64(int64(v.bits)), true
	case RealKind:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// StringValue returns the string held by v; ok is false for any other kind.
func (v Value) StringValue() (string, bool) {
	if v.kind != StringKind {
		return "", false
	}
	return v.s(), true
}

// ListValue returns the elements of a list value. The caller must not modify
// the returned slice.
func (v Value) ListValue() ([]Value, bool) {
	if v.kind != ListKind {
		return nil, false
	}
	return v.elems(), true
}

// ClassAdValue returns the ClassAd held by v. The ad is shared, not copied;
// the caller must not modify it.
func (v Value) ClassAdValue() (*ClassAd, bool) {
	if v.kind != AdKind {
		return nil, false
	}
	return v.scope().ad, true
}

// AbsTimeValue returns the seconds since the epoch and the zone offset of an
// absolute time.
func (v Value) AbsTimeValue() (sec int64, offset int, ok bool) {
	if v.kind != AbsTimeKind {
		return 0, 0, false
	}
	return int64(v.bits), int(v.off), true
}

// RelTimeValue returns the seconds of a relative time.
func (v Value) RelTimeValue() (float64, bool) {
	if v.kind != RelTimeKind {
		return 0, false
	}
	return math.Float64frombits(v.bits), true
}

// Raw accessors for the evaluator; callers have checked the kind.
func (v Value) i() int64       { return int64(v.bits) }
func (v Value) f() float64     { return math.Float64frombits(v.bits) }
func (v Value) b() bool        { return v.bits != 0 }
func (v Value) s() string      { return unsafe.String((*byte)(v.ptr), int(v.bits)) }
func (v Value) elems() []Value { return (*listValue)(v.ptr).elems }
func (v Value) scope() *adRef  { return (*adRef)(v.ptr) }

// String returns v in new-ClassAd syntax: 3, 0.5, "text", true, undefined,
// error, { 1,2 }, [ a = 1 ]. Reals always carry a decimal point or exponent.
func (v Value) String() string {
	var p printer
	p.value(v)
	return p.String()
}

// OldString returns v as old-ClassAd syntax writes it, as HTCondor's
// tools print values (condor_q -af, condor_status -af): reals in their
// shortest exact form, 0.25 rather than 2.500000000000000E-01.
func (v Value) OldString() string {
	p := printer{old: true}
	p.value(v)
	return p.String()
}

// formatRealLib writes f as libclassad unparses reals in new syntax: with
// sixteen significant digits in exponent form, 1.500000000000000E+00, and
// zero as 0.0 or -0.0.
func formatRealLib(f float64) string {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return formatReal(f)
	case f == 0 && math.Signbit(f):
		return "-0.0"
	case f == 0:
		return "0.0"
	}
	return strconv.FormatFloat(f, 'E', 15, 64)
}

// formatReal writes f so that it reads back as the same real, in the
// shortest form.
func formatReal(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return `real("INF")`
	case math.IsInf(f, -1):
		return `real("-INF")`
	case math.IsNaN(f):
		return `real("NaN")`
	}
	format := byte('g')
	if a := math.Abs(f); a == 0 || a >= 1e-5 && a < 1e21 {
		format = 'f'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

package matchmaker

import (
	"cmp"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
)

// This file is the index of machine classes by the attributes that
// requests' Requirements constrain, after chapter 4 of Raman's thesis: a
// conjunct of the form TARGET.Attr op constant becomes a window on one
// dimension, each indexed attribute has a one-dimensional index of the
// classes' values, and a request's candidates are the classes that fall in
// every window. The result is a superset of the matches: candidates are
// verified by evaluating both Requirements.

// A bound is one indexable conjunct of a request's Requirements: the
// partner's attribute attr compared by op with a constant value.
type bound struct {
	attr  string // lower-case
	op    string // ==, !=, <, <=, >, >=, with the partner's attribute on the left
	num   float64
	str   string // lower-case, when isStr
	isStr bool
}

// flipped maps an operator to the one that means the same with its
// operands swapped.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// boundOf returns the bound a conjunct expresses, if it is a comparison
// of one partner attribute with an expression that depends on ad alone and
// evaluates to a number or a string.
func boundOf(ad *classad.ClassAd, text string, ts []exprtext.Token) (bound, bool) {
	at := -1
	depth := 0
	for i, t := range ts {
		if t.Kind == exprtext.Ident && (strings.EqualFold(t.Text, "is") || strings.EqualFold(t.Text, "isnt")) {
			return bound{}, false
		}
		if t.Kind != exprtext.Punct {
			continue
		}
		switch t.Text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "=?=", "=!=":
			return bound{}, false
		case "==", "!=", "<", "<=", ">", ">=":
			if depth == 0 {
				if at >= 0 {
					return bound{}, false
				}
				at = i
			}
		}
	}
	if at <= 0 || at == len(ts)-1 {
		return bound{}, false
	}
	op := ts[at].Text
	left, right := ts[:at], ts[at+1:]
	attr, ok := partnerAttr(ad, left)
	constant := right
	if !ok {
		if attr, ok = partnerAttr(ad, right); !ok {
			return bound{}, false
		}
		constant, op = left, flipped[op]
	}
	r := newRefs()
	r.addRefs(ad, constant)
	r.closure(ad)
	if len(r.external) > 0 {
		return bound{}, false
	}
	e, err := classad.ParseExpr(exprtext.Source(text, constant))
	if err != nil {
		return bound{}, false
	}
	v := ad.EvalExpr(e, nil)
	b := bound{attr: attr, op: op}
	switch v.Kind() {
	case classad.IntKind, classad.RealKind:
		b.num, _ = v.RealValue()
	case classad.StringKind:
		if op != "==" && op != "!=" {
			return bound{}, false
		}
		s, _ := v.StringValue()
		b.str, b.isStr = strings.ToLower(s), true
	default:
		return bound{}, false
	}
	return b, true
}

// partnerAttr reports whether ts is exactly a reference to one attribute
// of the match partner, and which.
func partnerAttr(ad *classad.ClassAd, ts []exprtext.Token) (string, bool) {
	switch {
	case len(ts) == 3 && ts[0].Kind == exprtext.Ident && scopeOf(ts[0].Text) == 't' &&
		ts[1].Is(".") && ts[2].Kind == exprtext.Ident:
		return strings.ToLower(ts[2].Text), true
	case len(ts) == 1 && ts[0].Kind == exprtext.Ident && !exprtext.Keyword(ts[0].Text) && scopeOf(ts[0].Text) == 0:
		if _, ok := ad.Lookup(ts[0].Text); !ok {
			return strings.ToLower(ts[0].Text), true
		}
	}
	return "", false
}

// admits reports whether a partner value v can satisfy b. A value that is
// not a literal number or string (an expression, a boolean) is deviant and
// always admitted; a missing or undefined value never is, as the
// comparison would then be undefined.
func (b bound) admits(v classad.Value, literal bool) bool {
	if !literal {
		return true
	}
	switch v.Kind() {
	case classad.UndefinedKind:
		return false
	case classad.StringKind:
		if !b.isStr {
			return false
		}
		s, _ := v.StringValue()
		eq := strings.EqualFold(s, b.str)
		return eq == (b.op == "==")
	case classad.IntKind, classad.RealKind:
		if b.isStr {
			return false
		}
		f, _ := v.RealValue()
		switch b.op {
		case "==":
			return f == b.num
		case "!=":
			return f != b.num
		case "<":
			return f < b.num
		case "<=":
			return f <= b.num
		case ">":
			return f > b.num
		case ">=":
			return f >= b.num
		}
	}
	return true
}

// classValue is the value of one indexed attribute in one class.
type classValue struct {
	v       classad.Value
	literal bool // false: an expression, evaluated only when matching
}

// attrIndex indexes the classes by one attribute.
type attrIndex struct {
	strs    map[string][]int32 // lower-cased string value → classes
	nums    []numEntry         // sorted by value
	deviant []int32            // classes whose value is not a literal
}

type numEntry struct {
	v float64
	c int32
}

// classIndex is the index of a cycle's machine classes.
type classIndex struct {
	values [][]classValue // per class, per indexed attribute
	attrs  map[string]int // indexed attribute → position in values
	by     []attrIndex
}

// buildIndex indexes classes (each given by a representative ad) on attrs.
func buildIndex(reps []*classad.ClassAd, attrs []string) *classIndex {
	x := &classIndex{attrs: make(map[string]int, len(attrs)), by: make([]attrIndex, len(attrs)), values: make([][]classValue, len(reps))}
	for i, a := range attrs {
		x.attrs[a] = i
		x.by[i].strs = map[string][]int32{}
	}
	for c, ad := range reps {
		vals := make([]classValue, len(attrs))
		for i, a := range attrs {
			e, ok := ad.Lookup(a)
			if !ok {
				vals[i] = classValue{literal: true}
				continue
			}
			v, lit := e.AsLiteral()
			vals[i] = classValue{v: v, literal: lit}
			ix := &x.by[i]
			switch {
			case !lit || v.Kind() == classad.BoolKind:
				vals[i].literal = false
				ix.deviant = append(ix.deviant, int32(c))
			case v.Kind() == classad.StringKind:
				s, _ := v.StringValue()
				s = strings.ToLower(s)
				ix.strs[s] = append(ix.strs[s], int32(c))
			case v.Kind() == classad.IntKind || v.Kind() == classad.RealKind:
				f, _ := v.RealValue()
				ix.nums = append(ix.nums, numEntry{f, int32(c)})
			}
		}
		x.values[c] = vals
	}
	for i := range x.by {
		slices.SortFunc(x.by[i].nums, func(a, b numEntry) int { return cmp.Compare(a.v, b.v) })
	}
	return x
}

// postings returns the classes that may satisfy b, in no particular
// order, and whether the index can answer b at all.
func (x *classIndex) postings(b bound) ([]int32, bool) {
	i, ok := x.attrs[b.attr]
	if !ok || b.op == "!=" {
		return nil, false
	}
	ix := &x.by[i]
	var out []int32
	if b.isStr {
		out = append(out, ix.strs[b.str]...)
	} else {
		lo, hi := 0, len(ix.nums)
		ge := func(v float64) int {
			return search(ix.nums, func(e numEntry) bool { return e.v >= v })
		}
		gt := func(v float64) int {
			return search(ix.nums, func(e numEntry) bool { return e.v > v })
		}
		switch b.op {
		case "==":
			lo, hi = ge(b.num), gt(b.num)
		case "<":
			hi = ge(b.num)
		case "<=":
			hi = gt(b.num)
		case ">":
			lo = gt(b.num)
		case ">=":
			lo = ge(b.num)
		}
		for _, e := range ix.nums[lo:hi] {
			out = append(out, e.c)
		}
	}
	return append(out, ix.deviant...), true
}

// search returns the first position in the sorted entries where pred holds.
func search(es []numEntry, pred func(numEntry) bool) int {
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if pred(es[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// candidates returns, in class order, the classes that satisfy every
// bound: the smallest posting list filtered by the other bounds. With no
// usable bound it returns every class.
func (x *classIndex) candidates(bounds []bound) []int32 {
	var best []int32
	found := false
	for _, b := range bounds {
		if p, ok := x.postings(b); ok && (!found || len(p) < len(best)) {
			best, found = p, true
		}
	}
	if !found {
		best = make([]int32, len(x.values))
		for i := range best {
			best[i] = int32(i)
		}
	}
	out := best[:0]
	for _, c := range best {
		if x.admitsAll(c, bounds) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// admitsAll checks class c against the bounds on indexed attributes.
func (x *classIndex) admitsAll(c int32, bounds []bound) bool {
	for _, b := range bounds {
		i, ok := x.attrs[b.attr]
		if !ok {
			continue
		}
		v := x.values[c][i]
		if !b.admits(v.v, v.literal) {
			return false
		}
	}
	return true
}

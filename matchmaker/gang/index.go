package gang

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
)

// This file is the probe index of chapter 4 of the thesis, over the
// candidates' ports (rids): each candidate port is a rectangle whose
// imported intervals are its own attribute values (points) and whose
// exported intervals are the bounds its constraint puts on the partner's
// attributes. A probe from a port of the gang starts from every live
// candidate port and excludes, dimension by dimension, the ones that
// cannot dock: those whose exported interval misses the port's own value
// (or that bound an attribute the port lacks), and those whose imported
// value misses one of the port's bounds (or that lack the attribute).
// Attributes that are not constants, and conjuncts that are not bounds,
// exclude nothing, so a probe's answer is a superset of the ports that
// dock, which evaluation then confirms.
//
// Two simplifications against the thesis: only the top-level conjuncts of
// a constraint become intervals (a constraint with || at its top bounds
// nothing, where the thesis makes one rectangle per disjunct), and one
// dimension per attribute name holds numbers and strings side by side,
// since a number never compares equal to a string.

// interval is a set of numbers, or of one string, a bound admits.
type interval struct {
	lo, hi         float64
	loOpen, hiOpen bool
	str            string // lower-cased; isStr: the value must equal it
	isStr          bool
	never          bool // no value can satisfy the bounds (or they are of both kinds)
}

var everything = interval{lo: math.Inf(-1), hi: math.Inf(1)}

func (iv interval) containsNum(f float64) bool {
	if iv.never || iv.isStr {
		return false
	}
	if f < iv.lo || f == iv.lo && iv.loOpen || f > iv.hi || f == iv.hi && iv.hiOpen {
		return false
	}
	return true
}

// narrow intersects iv with "value op k".
func (iv interval) narrow(op string, k classad.Value) (interval, bool) {
	if s, ok := k.StringValue(); ok {
		if op != "==" {
			return iv, false
		}
		s = strings.ToLower(s)
		switch {
		case iv.isStr && iv.str != s, !iv.isStr && iv != everything:
			iv.never = true
		default:
			iv.isStr, iv.str = true, s
		}
		return iv, true
	}
	f, ok := k.RealValue()
	if !ok || math.IsNaN(f) || op == "!=" {
		return iv, false
	}
	if iv.isStr {
		iv.never = true
		return iv, true
	}
	switch op {
	case "==":
		iv = iv.narrow1(">=", f).narrow1("<=", f)
	default:
		iv = iv.narrow1(op, f)
	}
	if iv.lo > iv.hi || iv.lo == iv.hi && (iv.loOpen || iv.hiOpen) {
		iv.never = true
	}
	return iv, true
}

func (iv interval) narrow1(op string, f float64) interval {
	switch op {
	case ">", ">=":
		if f > iv.lo || f == iv.lo && op == ">" {
			iv.lo, iv.loOpen = f, op == ">"
		}
	case "<", "<=":
		if f < iv.hi || f == iv.hi && op == "<" {
			iv.hi, iv.hiOpen = f, op == "<"
		}
	}
	return iv
}

// group is a set of rids, kept also as a bitset once large enough that
// or-ing words beats setting bits one by one.
type group struct {
	rids []int32
	bits bitset
}

func (g *group) addTo(out bitset) {
	if g.bits != nil {
		out.or(g.bits)
		return
	}
	for _, r := range g.rids {
		out.set(int(r))
	}
}

func (g *group) seal(n int) {
	if len(g.rids) >= 64 {
		g.bits = newBitset(n)
		for _, r := range g.rids {
			g.bits.set(int(r))
		}
	}
}

// expDim is one exported dimension: the bounds candidate ports put on one
// attribute of their partner, grouped by distinct interval (a pool's
// machines bound a job's memory in a handful of ways, not in thousands).
type expDim struct {
	bounded bitset             // rids that bound the attribute
	byRid   map[int32]interval // their intervals
	nums    []numGroup         // numeric intervals, by lower end
	strs    map[string]*group  // string equalities
}

type numGroup struct {
	iv interval
	g  *group
}

// admit sets in out the rids of d whose bound a partner value v satisfies.
func (d *expDim) admit(v classad.Value, out bitset) {
	clear(out)
	if s, ok := v.StringValue(); ok {
		if g := d.strs[strings.ToLower(s)]; g != nil {
			g.addTo(out)
		}
		return
	}
	f, _ := v.RealValue()
	end, _ := slices.BinarySearchFunc(d.nums, f, func(e numGroup, f float64) int {
		if e.iv.lo <= f {
			return -1
		}
		return 1
	})
	for _, e := range d.nums[:end] {
		if e.iv.containsNum(f) {
			e.g.addTo(out)
		}
	}
}

// impDim is one imported dimension: the candidate ports' values of one
// attribute.
type impDim struct {
	nums    []numRid // sorted by value
	strs    map[string]*group
	deviant bitset // values known only by evaluation
}

type numRid struct {
	v   float64
	rid int32
}

// admit sets in out the rids whose value may satisfy "value op k", and
// reports whether the bound could be used at all.
func (d *impDim) admit(op string, k classad.Value, out bitset) bool {
	clear(out)
	if s, ok := k.StringValue(); ok {
		if op != "==" {
			return false
		}
		if g := d.strs[strings.ToLower(s)]; g != nil {
			g.addTo(out)
		}
		out.or(d.deviant)
		return true
	}
	f, ok := k.RealValue()
	if !ok || math.IsNaN(f) || op == "!=" {
		return false
	}
	ge := func(x float64) int {
		i, _ := slices.BinarySearchFunc(d.nums, x, func(e numRid, x float64) int { return cmp.Compare(e.v, x) })
		return i
	}
	gt := func(x float64) int {
		i, _ := slices.BinarySearchFunc(d.nums, x, func(e numRid, x float64) int {
			if e.v <= x {
				return -1
			}
			return 1
		})
		return i
	}
	lo, hi := 0, len(d.nums)
	switch op {
	case "==":
		lo, hi = ge(f), gt(f)
	case "<":
		hi = ge(f)
	case "<=":
		hi = gt(f)
	case ">":
		lo = gt(f)
	case ">=":
		lo = ge(f)
	}
	for _, e := range d.nums[lo:hi] {
		out.set(int(e.rid))
	}
	out.or(d.deviant)
	return true
}

// admitIntervals sets in out the rids whose numeric value lies in one of
// ivs, or is deviant.
func (d *impDim) admitIntervals(ivs []interval, out bitset) {
	clear(out)
	for _, iv := range ivs {
		lo, _ := slices.BinarySearchFunc(d.nums, iv.lo, func(e numRid, x float64) int { return cmp.Compare(e.v, x) })
		for _, e := range d.nums[lo:] {
			if e.v > iv.hi {
				break
			}
			if iv.containsNum(e.v) {
				out.set(int(e.rid))
			}
		}
	}
	out.or(d.deviant)
}

// rid is one candidate port.
type rid struct {
	mb *member
	j  int
}

// index holds the candidate ports' rectangles.
type index struct {
	rids []rid
	ev   *classad.Matcher
	exp  map[string]*expDim
	imp  map[string]*impDim // built when a probe first needs the dimension
}

func newIndex(rids []rid, ev *classad.Matcher) *index {
	x := &index{rids: rids, ev: ev, exp: map[string]*expDim{}, imp: map[string]*impDim{}}
	groups := map[string]map[interval]*group{}
	for r, rd := range rids {
		ivs := map[string]interval{}
		for _, b := range rd.mb.view(rd.j).bounds() {
			if !b.deps.constant() {
				continue
			}
			k := ev.EvalExprIn(&rd.mb.port[rd.j], b.rhs)
			iv, ok := ivs[b.attr]
			if !ok {
				iv = everything
			}
			if k.IsUndefined() || k.IsError() {
				iv.never = true // the conjunct is never true
			} else if iv, ok = iv.narrow(b.op, k); !ok {
				continue
			}
			ivs[b.attr] = iv
		}
		for a, iv := range ivs {
			d := x.exp[a]
			if d == nil {
				d = &expDim{bounded: newBitset(len(rids)), byRid: map[int32]interval{}, strs: map[string]*group{}}
				x.exp[a] = d
				groups[a] = map[interval]*group{}
			}
			d.bounded.set(r)
			d.byRid[int32(r)] = iv
			switch {
			case iv.never:
			case iv.isStr:
				g := d.strs[iv.str]
				if g == nil {
					g = &group{}
					d.strs[iv.str] = g
				}
				g.rids = append(g.rids, int32(r))
			default:
				g := groups[a][iv]
				if g == nil {
					g = &group{}
					groups[a][iv] = g
					d.nums = append(d.nums, numGroup{iv, g})
				}
				g.rids = append(g.rids, int32(r))
			}
		}
	}
	for _, d := range x.exp {
		slices.SortStableFunc(d.nums, func(a, b numGroup) int { return cmp.Compare(a.iv.lo, b.iv.lo) })
		for _, e := range d.nums {
			e.g.seal(len(rids))
		}
		for _, g := range d.strs {
			g.seal(len(rids))
		}
	}
	return x
}

// imported returns the imported dimension of attribute a, building it.
func (x *index) imported(a string) *impDim {
	if d := x.imp[a]; d != nil {
		return d
	}
	d := &impDim{strs: map[string]*group{}, deviant: newBitset(len(x.rids))}
	for r, rd := range x.rids {
		switch v, known := x.candidateValue(rd, a); {
		case !known:
			d.deviant.set(r)
		case v.Kind() == classad.StringKind:
			s, _ := v.StringValue()
			s = strings.ToLower(s)
			g := d.strs[s]
			if g == nil {
				g = &group{}
				d.strs[s] = g
			}
			g.rids = append(g.rids, int32(r))
		case v.Kind() == classad.IntKind || v.Kind() == classad.RealKind:
			f, _ := v.RealValue()
			d.nums = append(d.nums, numRid{f, int32(r)})
		}
	}
	slices.SortStableFunc(d.nums, func(a, b numRid) int { return cmp.Compare(a.v, b.v) })
	for _, g := range d.strs {
		g.seal(len(x.rids))
	}
	x.imp[a] = d
	return d
}

// candidateValue returns a candidate port's value of attribute a as its
// partner sees it, and whether it is known before anything docks: a
// missing attribute is undefined, known.
func (x *index) candidateValue(rd rid, a string) (classad.Value, bool) {
	v := rd.mb.view(rd.j)
	if _, ok := v.lookup(a); !ok {
		return classad.Undefined(), v.label(a) < 0
	}
	if !v.attrDeps(a, map[string]bool{}).constant() {
		return classad.Undefined(), false
	}
	val := x.ev.EvalIn(&rd.mb.port[rd.j], a)
	switch val.Kind() {
	case classad.IntKind, classad.RealKind, classad.StringKind, classad.UndefinedKind, classad.ErrorKind:
		return val, true
	}
	return val, false
}

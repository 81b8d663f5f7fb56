package gang

import (
	"cmp"
	"slices"

	"harrier.dev/harrier/classad"
)

// A hole is a port of the gang to fill: port k of member mb.
type hole struct {
	mb      *member
	k       int
	started bool
	// set holds the candidates of the hole's probe (LR, DYN); nil means
	// every live candidate (naive).
	set bitset
	// list holds the docking candidates best first, when the port ranks.
	list []int32
	pos  int // where the next candidate is looked for, in set or list
	rid  int // the candidate port docked, -1 for none
	// filter (DYN) is the window shunted from a scarcer port; first is
	// the initial probe, used again for the first fill.
	filter, first bitset
}

// search is the marshalling of one gang. Holes before the current one are
// filled and those after it empty; filling a hole with a candidate that
// has ports of its own inserts holes for them right after it, and
// emptying it takes them out again.
type search struct {
	m        *Matcher
	alg      Algorithm
	root     *member
	holes    []hole
	rootCand int // the request's number among the candidates, or -1
	tmp      bitset
	// deepest (when recording, for Explain) is the most holes the search
	// filled at once, and the holes there, the first of them empty.
	record  bool
	deepest int
	reached []hole
	tries   int64 // docking tests so far
	gaveUp  bool  // tries reached the bound
}

func (m *Matcher) newSearch(root *member) *search {
	s := &search{m: m, alg: m.opts.Algorithm, root: root, rootCand: -1, tmp: newBitset(len(m.rids))}
	if i, ok := m.byAd[root.ad]; ok {
		s.rootCand = i
		m.members[i].inGang = true
	}
	root.inGang = true
	for k := range root.ports {
		s.holes = append(s.holes, hole{mb: root, k: k, rid: -1})
	}
	return s
}

// release undocks what is docked, leaving the candidates as they were.
func (s *search) release() {
	for i := len(s.holes) - 1; i >= 0; i-- {
		if s.holes[i].rid >= 0 {
			s.leave(i)
		}
	}
	if s.rootCand >= 0 {
		s.m.members[s.rootCand].inGang = false
	}
}

// run fills every hole or reports that no gang exists.
func (s *search) run() bool {
	if s.record {
		s.reached = slices.Clone(s.holes)
	}
	if s.alg == DYN && !s.prepare(s.holes) {
		return false
	}
	i := 0
	for i >= 0 && !s.gaveUp {
		if i == len(s.holes) {
			return true
		}
		if s.holes[i].rid >= 0 {
			s.leave(i)
		}
		if !s.fill(i) {
			s.reset(i)
			i--
			continue
		}
		if !s.enter(i) {
			s.undock(i)
			continue
		}
		i++
		if s.record && i > s.deepest {
			s.deepest, s.reached = i, slices.Clone(s.holes)
		}
	}
	return false
}

// fill docks the next candidate of hole i that docks, in preference order.
func (s *search) fill(i int) bool {
	h := &s.holes[i]
	if !h.started {
		s.start(h)
	}
	for {
		r := s.next(h)
		if r < 0 {
			return false
		}
		rd := s.m.rids[r]
		if rd.mb.inGang {
			continue
		}
		if h.list != nil {
			dock(h.mb, h.k, rd.mb, rd.j) // tested when the list was made
		} else if !s.try(h.mb, h.k, rd) {
			continue
		}
		h.rid = r
		rd.mb.inGang = true
		return true
	}
}

// next returns the hole's next candidate port, or -1.
func (s *search) next(h *hole) int {
	if h.list != nil {
		if h.pos >= len(h.list) {
			return -1
		}
		h.pos++
		return int(h.list[h.pos-1])
	}
	set := h.set
	if set == nil {
		set = s.m.live
	}
	r := set.next(h.pos)
	for r >= 0 && !s.m.live.has(r) {
		r = set.next(r + 1)
	}
	if r < 0 {
		h.pos = len(set) * 64 // exhausted until reset
		return -1
	}
	h.pos = r + 1
	return r
}

// start begins filling a hole afresh: its probe (LR, DYN) and, if its
// port ranks, the ranked list of the candidates that dock.
func (s *search) start(h *hole) {
	h.started, h.pos = true, 0
	switch s.alg {
	case LR:
		h.set = s.probe(h.mb, h.k)
	case DYN:
		if h.first != nil {
			h.set, h.first = h.first, nil
		} else {
			h.set = s.probe(h.mb, h.k)
		}
		if h.filter != nil {
			h.set.and(h.filter)
		}
	}
	if h.mb.ports[h.k].Rank == "" {
		return
	}
	type ranked struct {
		r    int32
		rank float64
	}
	var rs []ranked
	for r := s.next(h); r >= 0; r = s.next(h) {
		rd := s.m.rids[r]
		if rd.mb.inGang || !s.try(h.mb, h.k, rd) {
			continue
		}
		rs = append(rs, ranked{int32(r), s.m.rank(h.mb, h.k)})
		undock(h.mb, h.k, rd.mb, rd.j)
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(b.rank, a.rank) })
	h.list = make([]int32, len(rs))
	for i, x := range rs {
		h.list[i] = x.r
	}
	h.pos = 0
}

// reset forgets a hole's probe and history, as backtracking from it must:
// the ports before it will change.
func (s *search) reset(i int) {
	h := &s.holes[i]
	h.started, h.set, h.list, h.pos = false, nil, nil, 0
}

// try docks port k of mb with candidate port rd and keeps it docked if
// both constraints hold.
func (s *search) try(mb *member, k int, rd rid) bool {
	if s.tries++; s.tries > s.m.opts.MaxTries {
		s.gaveUp = true
		return false
	}
	dock(mb, k, rd.mb, rd.j)
	if s.holds(mb, k) && s.holds(rd.mb, rd.j) {
		return true
	}
	undock(mb, k, rd.mb, rd.j)
	return false
}

func (s *search) holds(mb *member, k int) bool {
	p := mb.ports[k]
	if p.Constraint == "" {
		return false
	}
	s.m.stats.Evaluations++
	return holds(s.m.ev.EvalIn(&mb.port[k], p.Constraint), p.Implicit())
}

// leave empties hole i and takes out the holes of the member docked there.
func (s *search) leave(i int) {
	n := len(s.m.rids[s.holes[i].rid].mb.ports)
	s.undock(i)
	s.holes = slices.Delete(s.holes, i+1, i+n)
}

// undock empties hole i.
func (s *search) undock(i int) {
	h := &s.holes[i]
	rd := s.m.rids[h.rid]
	undock(h.mb, h.k, rd.mb, rd.j)
	rd.mb.inGang = false
	h.rid = -1
}

// enter adds holes for the other ports of the member just docked at hole
// i. It fails if DYN finds one of them without candidates.
func (s *search) enter(i int) bool {
	rd := s.m.rids[s.holes[i].rid]
	if len(rd.mb.ports) == 1 {
		return true
	}
	var add []hole
	for j := range rd.mb.ports {
		if j != rd.j {
			add = append(add, hole{mb: rd.mb, k: j, rid: -1})
		}
	}
	if s.alg == DYN && !s.prepare(add) {
		return false
	}
	s.holes = slices.Insert(s.holes, i+1, add...)
	return true
}

// prepare is DYN's first pass over an ad's empty ports hs: a probe for
// each, ending the search if one finds nothing, and for a port with fewer
// candidates than a port before it that it reads (License's HostId =
// Cpu.Key), the shunting of its candidates' bounds onto that port.
func (s *search) prepare(hs []hole) bool {
	sets := make([]bitset, len(hs))
	cards := make([]int, len(hs))
	for i := range hs {
		sets[i] = s.probe(hs[i].mb, hs[i].k)
		if cards[i] = sets[i].count(); cards[i] == 0 {
			return false
		}
	}
	for b := range hs {
		for a := range hs {
			if hs[a].k >= hs[b].k || cards[b] >= cards[a] {
				continue
			}
			for name := range s.m.ix.exp {
				sh, ok := hs[b].mb.view(hs[b].k).shuntOf(name)
				if !ok || sh.from != hs[a].k {
					continue
				}
				ivs, ok := s.union(sets[b], name, sh.offset)
				if !ok {
					continue
				}
				f := newBitset(len(s.m.rids))
				s.m.ix.imported(sh.attr).admitIntervals(ivs, f)
				if hs[a].filter == nil {
					hs[a].filter = f
				} else {
					hs[a].filter.and(f)
				}
			}
		}
	}
	hs[0].first = sets[0]
	return true
}

// union returns the distinct numeric intervals that the candidates in set
// put on attribute name, moved by -offset; false if one of them leaves it
// unbounded or bounds it by a string.
func (s *search) union(set bitset, name string, offset float64) ([]interval, bool) {
	d := s.m.ix.exp[name]
	seen := map[interval]bool{}
	var out []interval
	for r := set.next(0); r >= 0; r = set.next(r + 1) {
		if !d.bounded.has(r) {
			return nil, false
		}
		iv := d.byRid[int32(r)]
		switch {
		case iv.never:
			continue
		case iv.isStr:
			return nil, false
		}
		iv.lo, iv.hi = iv.lo-offset, iv.hi-offset
		if !seen[iv] {
			seen[iv] = true
			out = append(out, iv)
		}
	}
	return out, true
}

// probe returns the candidate ports that may dock with port k of mb as
// the gang stands: the thesis's Algorithm 2, specialised against the
// partial gang.
func (s *search) probe(mb *member, k int) bitset {
	m := s.m
	m.stats.Probes++
	o := slices.Clone(m.live)
	for a, d := range m.ix.exp {
		v, known := s.ownValue(mb, k, a)
		if !known {
			continue
		}
		switch v.Kind() {
		case classad.IntKind, classad.RealKind, classad.StringKind:
			d.admit(v, s.tmp)
			o.andNotOr(d.bounded, s.tmp)
		default: // missing: every bound on it fails
			clear(s.tmp)
			o.andNotOr(d.bounded, s.tmp)
		}
	}
	for _, b := range mb.boundsOf(k) {
		if !s.settled(mb, k, b.deps) {
			continue
		}
		v := m.ev.EvalExprIn(&mb.port[k], b.rhs)
		if v.IsUndefined() || v.IsError() {
			clear(o) // partner.attr op undefined is never true
			return o
		}
		if m.ix.imported(b.attr).admit(b.op, v, s.tmp) {
			o.and(s.tmp)
		}
	}
	return o
}

// settled reports whether an expression of port k with dependencies d
// has its final value now: it reads no partner of k, nothing only
// evaluation can tell, and only labels already docked.
func (s *search) settled(mb *member, k int, d deps) bool {
	return !d.partner && !d.opaque && d.labels&(1<<k) == 0 && d.labels&^mb.docked == 0
}

// ownValue returns port k's value of attribute a as a partner's bound
// reads it, and whether it is settled; a missing attribute is undefined.
func (s *search) ownValue(mb *member, k int, a string) (classad.Value, bool) {
	v := mb.view(k)
	if _, ok := v.lookup(a); !ok {
		return classad.Undefined(), v.label(a) < 0
	}
	if !s.settled(mb, k, mb.attrDeps(k, a)) {
		return classad.Undefined(), false
	}
	val := s.m.ev.EvalIn(&mb.port[k], a)
	switch val.Kind() {
	case classad.IntKind, classad.RealKind, classad.StringKind, classad.UndefinedKind, classad.ErrorKind:
		return val, true
	}
	return val, false
}

// gang reads the filled holes.
func (s *search) gang() *Gang {
	g := &Gang{Request: s.root.ad}
	owner := map[*member]int{s.root: -1}
	for _, h := range s.holes {
		rd := s.m.rids[h.rid]
		g.Members = append(g.Members, Member{Owner: owner[h.mb], Port: h.k, Label: h.mb.ports[h.k].Label,
			Candidate: rd.mb.cand, Ad: rd.mb.ad, Link: rd.j})
		owner[rd.mb] = len(g.Members) - 1
	}
	return g
}

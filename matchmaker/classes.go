package matchmaker

import (
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
)

// This file groups the free machines of a cycle into classes of machines
// that no request can tell apart, the machine-side counterpart of
// autoclustering (the thesis' "summarization" of offers into buckets): a
// request's matchlist is computed once per class rather than once per
// machine. Two machines are in one class when their Requirements, less the
// conjuncts that read only the machine itself and hold now, and their Rank
// are the same text, and every machine attribute that text or any
// request's Requirements or Rank can reach has the same expression.
// Conjuncts such as LoadAvg <= 0.3 are evaluated once per machine: a
// machine where one fails cannot match anything in this cycle.

// A machineClass is a set of interchangeable free machines.
type machineClass struct {
	rep     *classad.ClassAd
	members []int32 // indices of free machines, in name order
	next    int     // members[:next] are taken
}

// free reports how many members are still untaken.
func (c *machineClass) free() int { return len(c.members) - c.next }

// policyShape is the scanned form of one Requirements and Rank text pair,
// shared by the many machines that advertise the same policy.
type policyShape struct {
	reqText, rankText string
	conj              [][]tok
	rank              []tok
}

// classifier groups machines; it caches work shared between machines.
type classifier struct {
	shapes  map[[2]string]*policyShape
	parsed  map[string]classad.Expr // self conjunct text → expression
	jobRefs []string                // what requests read in machines, sorted
}

func newClassifier(jobRefs []string) *classifier {
	return &classifier{shapes: map[[2]string]*policyShape{}, parsed: map[string]classad.Expr{}, jobRefs: jobRefs}
}

func (cl *classifier) shape(ad *classad.ClassAd) *policyShape {
	key := [2]string{exprText(ad, "Requirements"), exprText(ad, "Rank")}
	if s, ok := cl.shapes[key]; ok {
		return s
	}
	s := &policyShape{reqText: key[0], rankText: key[1], rank: scanExpr(key[1])}
	if key[0] != "" {
		s.conj = conjuncts(scanExpr(key[0]))
	}
	cl.shapes[key] = s
	return s
}

// signature returns the class key of a machine, or ok false if one of its
// self-only Requirements conjuncts does not hold. external collects the
// partner attributes its Requirements and Rank read: the significant
// attributes of autoclustering.
func (cl *classifier) signature(ad *classad.ClassAd, external map[string]bool) (sig string, ok bool) {
	s := cl.shape(ad)
	var b strings.Builder
	r := newRefs()
	holds := true
	for _, c := range s.conj {
		cr := newRefs()
		cr.addRefs(ad, c)
		cr.closure(ad)
		for n := range cr.external {
			external[n] = true
		}
		if len(cr.external) == 0 && holds {
			if truthy(ad.EvalExpr(cl.parse(source(s.reqText, c)), nil)) {
				continue
			}
			holds = false
		}
		for n := range cr.internal {
			r.internal[n] = true
		}
		b.WriteString(source(s.reqText, c))
		b.WriteString(" && ")
	}
	if !holds {
		return "", false
	}
	b.WriteByte(0)
	b.WriteString(s.rankText)
	b.WriteByte(0)
	r.addRefs(ad, s.rank)
	for n := range r.external {
		external[n] = true
	}
	for _, n := range cl.jobRefs {
		if _, ok := ad.Lookup(n); ok {
			r.internal[n] = true
		}
	}
	r.closure(ad)
	names := make([]string, 0, len(r.internal)+len(cl.jobRefs))
	for n := range r.internal {
		names = append(names, n)
	}
	names = append(names, cl.jobRefs...) // absent ones count too
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(exprText(ad, n))
		b.WriteByte(0)
	}
	return b.String(), true
}

func (cl *classifier) parse(text string) classad.Expr {
	if e, ok := cl.parsed[text]; ok {
		return e
	}
	e, err := classad.ParseExpr(text)
	if err != nil {
		// Printed expressions parse back; if one does not, the literal
		// error makes the conjunct fail, and the machine wait a cycle.
		e = classad.Literal(classad.Error())
	}
	cl.parsed[text] = e
	return e
}

// truthy reports whether v makes a conjunct of && true: true, or a
// non-zero number, as HTCondor reads numbers in logical operators.
func truthy(v classad.Value) bool {
	if v.IsTrue() {
		return true
	}
	if f, ok := v.RealValue(); ok && v.Kind() != classad.BoolKind {
		return f != 0
	}
	return false
}

// classify groups free machines (in name order) into classes, in the order
// of each class's first machine, and returns the number of machines whose
// own conditions exclude them from this cycle.
func (cl *classifier) classify(free []Machine, external map[string]bool) (classes []machineClass, excluded int) {
	byKey := map[string]int{}
	for i, m := range free {
		sig, ok := cl.signature(m.Ad, external)
		if !ok {
			excluded++
			continue
		}
		c, seen := byKey[sig]
		if !seen {
			c = len(classes)
			byKey[sig] = c
			classes = append(classes, machineClass{rep: m.Ad})
		}
		classes[c].members = append(classes[c].members, int32(i))
	}
	return classes, excluded
}

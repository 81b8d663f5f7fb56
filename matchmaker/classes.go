package matchmaker

import (
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
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
	conj              [][]exprtext.Token
	rank              []exprtext.Token
	idents            []string // every name in either text, lower-cased
	// analyses caches the analysis of machines whose attributes named in
	// idents or jobRefs are all literals or absent, keyed by which are
	// absent: then nothing else in the machine can change the analysis.
	analyses map[string]*analysis
}

// analysis is what a machine's policy means for classing it.
type analysis struct {
	self     []classad.Expr  // conjuncts that read only the machine
	prefix   string          // the other conjuncts and the Rank text
	names    []string        // the attributes whose values the class shares
	external map[string]bool // the partner attributes the policy reads
}

// classifier groups machines; it caches work shared between machines.
type classifier struct {
	shapes  map[[2]string]*policyShape
	parsed  map[string]classad.Expr // self conjunct text → expression
	jobRefs []string                // what requests read in machines, sorted
	key     []byte                  // scratch for analysis keys
}

func newClassifier(jobRefs []string) *classifier {
	return &classifier{shapes: map[[2]string]*policyShape{}, parsed: map[string]classad.Expr{}, jobRefs: jobRefs}
}

func (cl *classifier) shape(ad *classad.ClassAd) *policyShape {
	key := [2]string{exprText(ad, "Requirements"), exprText(ad, "Rank")}
	if s, ok := cl.shapes[key]; ok {
		return s
	}
	s := &policyShape{reqText: key[0], rankText: key[1], rank: exprtext.Scan(key[1]), analyses: map[string]*analysis{}}
	if key[0] != "" {
		s.conj = exprtext.Conjuncts(exprtext.Scan(key[0]))
	}
	seen := map[string]bool{}
	for _, ts := range append(slices.Clone(s.conj), s.rank) {
		for _, t := range ts {
			if n := strings.ToLower(t.Text); t.Kind == exprtext.Ident && !seen[n] {
				seen[n] = true
				s.idents = append(s.idents, n)
			}
		}
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
	a := cl.cached(s, ad)
	for n := range a.external {
		external[n] = true
	}
	for _, e := range a.self {
		if !truthy(ad.EvalExpr(e, nil)) {
			return "", false
		}
	}
	var b strings.Builder
	b.WriteString(a.prefix)
	for _, n := range a.names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(exprText(ad, n))
		b.WriteByte(0)
	}
	return b.String(), true
}

// cached returns the analysis of ad's policy s, from the cache when ad's
// attributes allow it.
func (cl *classifier) cached(s *policyShape, ad *classad.ClassAd) *analysis {
	key := cl.key[:0]
	for _, names := range [][]string{s.idents, cl.jobRefs} {
		for _, n := range names {
			e, ok := ad.Lookup(n)
			if !ok {
				key = append(key, 'U')
				continue
			}
			if _, lit := e.AsLiteral(); !lit {
				return cl.analyze(s, ad)
			}
			key = append(key, 'L')
		}
	}
	cl.key = key
	if a, ok := s.analyses[string(key)]; ok {
		return a
	}
	a := cl.analyze(s, ad)
	s.analyses[string(key)] = a
	return a
}

// analyze works out which conjuncts of ad's Requirements read only the
// machine, and which attributes the rest, the Rank and the requests read.
func (cl *classifier) analyze(s *policyShape, ad *classad.ClassAd) *analysis {
	a := &analysis{external: map[string]bool{}}
	var b strings.Builder
	r := newRefs()
	for _, c := range s.conj {
		cr := newRefs()
		cr.addRefs(ad, c)
		cr.closure(ad)
		for n := range cr.external {
			a.external[n] = true
		}
		if len(cr.external) == 0 {
			a.self = append(a.self, cl.parse(exprtext.Source(s.reqText, c)))
			continue
		}
		for n := range cr.internal {
			r.internal[n] = true
		}
		b.WriteString(exprtext.Source(s.reqText, c))
		b.WriteString(" && ")
	}
	b.WriteByte(0)
	b.WriteString(s.rankText)
	b.WriteByte(0)
	a.prefix = b.String()
	r.addRefs(ad, s.rank)
	for n := range r.external {
		a.external[n] = true
	}
	for _, n := range cl.jobRefs {
		if _, ok := ad.Lookup(n); ok {
			r.internal[n] = true
		}
	}
	r.closure(ad)
	for n := range r.internal {
		a.names = append(a.names, n)
	}
	a.names = append(a.names, cl.jobRefs...) // absent ones count too
	slices.Sort(a.names)
	a.names = slices.Compact(a.names)
	return a
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

package gang

import (
	"errors"
	"fmt"
	"strings"

	"harrier.dev/harrier/classad"
)

// Algorithm chooses how a Matcher searches for a gang.
type Algorithm uint8

// The algorithms of chapter 5 of the thesis. All three find the same gang.
const (
	// Naive fills ports left to right, trying every candidate port by
	// evaluating both constraints, and backtracks.
	Naive Algorithm = iota
	// LR fills ports in the same order, trying only the candidates of an
	// index probe specialised against the partial gang.
	LR
	// DYN adds, before filling an ad's ports, a probe per port: an empty
	// port ends the search at once, and a port with fewer candidates than
	// a port it depends on shunts its candidates' constraints onto that
	// port's probe.
	DYN
)

var algorithmNames = [...]string{Naive: "naive", LR: "LR", DYN: "DYN"}

func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", a)
}

// ParseAlgorithm reads an algorithm's name, ignoring case.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, n := range algorithmNames {
		if strings.EqualFold(n, s) {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("unknown gangmatching algorithm %q (naive, LR or DYN)", s)
}

// Options configure a Matcher.
type Options struct {
	Algorithm Algorithm
	// MaxTries bounds the docking tests of one Marshal (0 means
	// DefaultMaxTries): search is exponential in a request's ports in
	// the worst case, and one request must not stall a cycle.
	MaxTries int64
}

// DefaultMaxTries is the bound on docking tests per gang when Options
// gives none: some seconds of work.
const DefaultMaxTries = 1 << 24

// ErrTooHard is returned by Marshal when a search gives up.
var ErrTooHard = errors.New("gang search gave up: too many docking tests")

// Stats count a Matcher's work since it was made: index probes and
// constraint evaluations (each side of a docking test is one evaluation,
// as is each Rank).
type Stats struct {
	Probes      int64
	Evaluations int64
}

// Matcher marshals gangs from one cycle's candidate ads, one request at a
// time, each candidate in at most one gang (see Consume). A Matcher is
// not safe for concurrent use.
type Matcher struct {
	opts    Options
	members []*member // per candidate, nil if its Ports are bad
	byAd    map[*classad.ClassAd]int
	invalid map[int]error
	rids    []rid
	live    bitset // candidate ports of ads not yet consumed
	ix      *index
	ev      classad.Matcher
	stats   Stats
}

// NewMatcher prepares to marshal gangs from candidates, the cycle's
// offers (machines, licenses, ...): it reads their Ports and indexes
// them. Candidates whose Ports are bad take no part; Invalid says why.
func NewMatcher(candidates []*classad.ClassAd, opts Options) *Matcher {
	if opts.MaxTries <= 0 {
		opts.MaxTries = DefaultMaxTries
	}
	m := &Matcher{opts: opts, members: make([]*member, len(candidates)),
		byAd: make(map[*classad.ClassAd]int, len(candidates)), invalid: map[int]error{}}
	for i, ad := range candidates {
		ports, err := ParsePorts(ad)
		if err != nil {
			m.invalid[i] = err
			continue
		}
		mb := newMember(ad, ports, i)
		mb.rid0 = len(m.rids)
		m.members[i] = mb
		m.byAd[ad] = i
		for j := range ports {
			m.rids = append(m.rids, rid{mb, j})
		}
	}
	m.live = newBitset(len(m.rids))
	for r := range m.rids {
		m.live.set(r)
	}
	m.ix = newIndex(m.rids, &m.ev)
	return m
}

// Invalid returns the candidates left out for bad Ports, by their number.
func (m *Matcher) Invalid() map[int]error { return m.invalid }

// Stats returns the work done so far.
func (m *Matcher) Stats() Stats { return m.stats }

// Member is one docking of a gang: port Port of the gang's ad Owner
// holds port Link of candidate Candidate.
type Member struct {
	// Owner is the index in Gang.Members of the member whose port this
	// is, -1 for the request's own ports.
	Owner int
	// Port is the port of the owner, Label its label.
	Port  int
	Label string
	// Candidate is the number of the docked ad among the Matcher's
	// candidates, Ad the ad, Link its port docked here (its parent link).
	Candidate int
	Ad        *classad.ClassAd
	Link      int
}

// Gang is a marshalled gang: a request and, in the order their ports
// were filled (each ad's ports left to right, depth first), the
// candidates docked at them.
type Gang struct {
	Request *classad.ClassAd
	Members []Member
}

// Marshal finds the gang for request: for each of its ports, left to
// right, the candidate its Rank likes best (ties going to the earlier
// candidate) among those with which the rest of the gang can still be
// completed, recursively for candidates with ports of their own. It
// returns nil if no gang can be formed, and an error only if the
// request's Ports are bad or the search gives up (ErrTooHard). Marshal does not consume the gang's members.
func (m *Matcher) Marshal(request *classad.ClassAd) (*Gang, error) {
	ports, err := ParsePorts(request)
	if err != nil {
		return nil, err
	}
	s := m.newSearch(newMember(request, ports, -1))
	defer s.release()
	if !s.run() {
		if s.gaveUp {
			return nil, ErrTooHard
		}
		return nil, nil
	}
	return s.gang(), nil
}

// Consume takes the members of g out of the candidates of later gangs.
func (m *Matcher) Consume(g *Gang) {
	for _, mb := range g.Members {
		m.consume(mb.Candidate)
	}
}

func (m *Matcher) consume(cand int) {
	mb := m.members[cand]
	for j := range mb.ports {
		m.live.clear(mb.rid0 + j)
	}
}

// Live reports whether candidate i can still join a gang.
func (m *Matcher) Live(i int) bool {
	mb := m.members[i]
	return mb != nil && m.live.has(mb.rid0)
}

// holds reports whether a constraint's value lets a port dock: exactly
// true, or for the implicit port of an ad without Ports, whatever
// classad.Match accepts (a non-zero number too).
func holds(v classad.Value, implicit bool) bool {
	if v.IsTrue() {
		return true
	}
	if !implicit {
		return false
	}
	f, ok := v.RealValue()
	return ok && f != 0
}

// rank evaluates port k's Rank: numbers, and booleans as 1 and 0, as
// classad.Rank; anything else ranks 0.
func (m *Matcher) rank(mb *member, k int) float64 {
	p := mb.ports[k]
	if p.Rank == "" {
		return 0
	}
	m.stats.Evaluations++
	v := m.ev.EvalIn(&mb.port[k], p.Rank)
	if b, ok := v.BoolValue(); ok {
		if b {
			return 1
		}
		return 0
	}
	f, _ := v.RealValue()
	return f
}

package gang

import (
	"fmt"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
)

// Explanation says why a request forms no gang, port by port, as far as
// the search got: the ports it filled on its deepest attempt, the port
// it could not fill there, and the ports it never reached.
type Explanation struct {
	// Formed is set if the request forms a gang after all; Ports is then
	// empty.
	Formed bool
	Ports  []PortReport
}

// PortReport is one port of an Explanation, with the ports before it
// filled as on the search's deepest attempt.
type PortReport struct {
	// Owner, Port and Label name the port as Member does.
	Owner int
	Port  int
	Label string
	// Candidate is the candidate docked at the port on the deepest
	// attempt, -1 if none was.
	Candidate int
	// Candidates counts the candidate ports that could still join the
	// gang; Admitted those the port's constraint is true of, Admitting
	// those whose constraint is true of the port, and Compatible those
	// both hold for.
	Candidates, Admitted, Admitting, Compatible int
	// Conjuncts count, for each conjunct of the port's constraint, the
	// candidates it is true of.
	Conjuncts []ConjunctCount
	// Conflict is the first conjunct true of no candidate, if any.
	Conflict string
	// Stuck marks the port the deepest attempt could not fill.
	Stuck bool
}

// ConjunctCount is one conjunct of a constraint and the candidates it
// admits.
type ConjunctCount struct {
	Expr    string
	Matches int
}

// Explain searches for the request's gang as Marshal does and, if none
// forms, says why. It changes neither the candidates nor Stats.
func (m *Matcher) Explain(request *classad.ClassAd) (*Explanation, error) {
	ports, err := ParsePorts(request)
	if err != nil {
		return nil, err
	}
	saved := m.stats
	defer func() { m.stats = saved }()
	s := m.newSearch(newMember(request, ports, -1))
	// LR, not DYN: all find the same gangs, but DYN can stop before
	// filling anything, and the report is of how far filling gets.
	s.alg, s.record = LR, true
	defer s.release()
	if s.run() {
		return &Explanation{Formed: true}, nil
	}
	s.release()
	s.root.inGang = true
	if s.rootCand >= 0 {
		m.members[s.rootCand].inGang = true
	}
	// Dock the deepest attempt again, then report on each port in turn.
	s.holes = s.reached
	x := &Explanation{}
	owner := map[*member]int{s.root: -1}
	for i := range s.holes {
		h := &s.holes[i]
		rep := s.report(h, owner[h.mb])
		rep.Stuck = i == s.deepest
		x.Ports = append(x.Ports, rep)
		if i < s.deepest {
			rd := m.rids[h.rid]
			dock(h.mb, h.k, rd.mb, rd.j)
			rd.mb.inGang = true
			owner[rd.mb] = i
		} else {
			h.rid = -1
		}
	}
	return x, nil
}

// report counts the candidates of hole h as the gang stands.
func (s *search) report(h *hole, owner int) PortReport {
	m := s.m
	p := h.mb.ports[h.k]
	rep := PortReport{Owner: owner, Port: h.k, Label: p.Label, Candidate: -1}
	if h.rid >= 0 {
		rep.Candidate = m.rids[h.rid].mb.cand
	}
	var conj []classad.Expr
	if e, ok := p.own(h.mb.ad).Lookup(p.Constraint); ok && p.Constraint != "" {
		text := e.String()
		for _, c := range exprtext.Conjuncts(exprtext.Scan(text)) {
			src := text[c[0].Start:c[len(c)-1].End]
			if x, err := classad.ParseExpr(src); err == nil {
				conj = append(conj, x)
				rep.Conjuncts = append(rep.Conjuncts, ConjunctCount{Expr: src})
			}
		}
	}
	for r := m.live.next(0); r >= 0; r = m.live.next(r + 1) {
		rd := m.rids[r]
		if rd.mb.inGang {
			continue
		}
		rep.Candidates++
		dock(h.mb, h.k, rd.mb, rd.j)
		a, b := s.holds(h.mb, h.k), s.holds(rd.mb, rd.j)
		for i, c := range conj {
			if holds(m.ev.EvalExprIn(&h.mb.port[h.k], c), p.Implicit()) {
				rep.Conjuncts[i].Matches++
			}
		}
		undock(h.mb, h.k, rd.mb, rd.j)
		if a {
			rep.Admitted++
		}
		if b {
			rep.Admitting++
		}
		if a && b {
			rep.Compatible++
		}
	}
	for _, c := range rep.Conjuncts {
		if c.Matches == 0 {
			rep.Conflict = c.Expr
			break
		}
	}
	return rep
}

// String renders the explanation for people, a port a paragraph.
func (x *Explanation) String() string {
	if x.Formed {
		return "a gang forms\n"
	}
	var b strings.Builder
	for _, p := range x.Ports {
		fmt.Fprintf(&b, "port %d (%s)", p.Port, p.Label)
		if p.Owner >= 0 {
			fmt.Fprintf(&b, " of the ad docked at step %d", p.Owner+1)
		}
		switch {
		case p.Candidate >= 0:
			fmt.Fprintf(&b, ": filled with candidate %d;", p.Candidate)
		case p.Stuck:
			b.WriteString(": no candidate docks here;")
		default:
			b.WriteString(": not reached;")
		}
		fmt.Fprintf(&b, " of %d candidates, the port accepts %d, %d accept the port, %d both\n",
			p.Candidates, p.Admitted, p.Admitting, p.Compatible)
		if !p.Stuck {
			continue
		}
		for _, c := range p.Conjuncts {
			fmt.Fprintf(&b, "  %6d  %s\n", c.Matches, c.Expr)
		}
		switch {
		case p.Conflict != "":
			fmt.Fprintf(&b, "  no candidate satisfies: %s\n", p.Conflict)
		case p.Compatible > 0:
			b.WriteString("  candidates dock here, but none lets the rest of the gang form\n")
		case p.Admitted > 0:
			b.WriteString("  the candidates the port accepts refuse it by their own constraints\n")
		default:
			b.WriteString("  no candidate satisfies all the conjuncts at once\n")
		}
	}
	return b.String()
}

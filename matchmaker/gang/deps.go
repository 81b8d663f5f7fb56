package gang

import (
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
)

// This file reads the structure of a port's expressions from their
// printed form (the classad package keeps its syntax tree to itself and
// guarantees that what it prints parses back the same): which labels an
// expression reads, directly or through the ad's own attributes, and which
// conjuncts of a constraint bound one attribute of the partner by a value
// the port can compute. Where the scan is unsure it answers the safe way:
// an expression depends on more, a conjunct is not a bound.

// deps says what an expression of a port reads besides the port's and its
// ad's own constant attributes.
type deps struct {
	labels  uint64 // the ports whose labels it reads
	partner bool   // the partner docked at the port: TARGET, other, or a name found nowhere else
	opaque  bool   // function calls, parent or root: a value known only by evaluating
}

func (d *deps) add(o deps) {
	d.labels |= o.labels
	d.partner = d.partner || o.partner
	d.opaque = d.opaque || o.opaque
}

// constant reports whether an expression with these dependencies has the
// same value whatever is docked.
func (d deps) constant() bool { return d.labels == 0 && !d.partner && !d.opaque }

// portView resolves names as an expression of port k of an ad sees them:
// the port's attributes, the ad's, then the labels of ports 0 to k.
type portView struct {
	ad    *classad.ClassAd
	ports []Port
	k     int
}

func (v portView) lookup(name string) (classad.Expr, bool) {
	if p := v.ports[v.k]; p.Ad != nil {
		if e, ok := p.Ad.Lookup(name); ok {
			return e, true
		}
	}
	return v.ad.Lookup(name)
}

// label returns the port whose label name is in scope at port k, or -1.
func (v portView) label(name string) int {
	if v.ports[v.k].Implicit() {
		return -1
	}
	for i := 0; i <= v.k; i++ {
		if strings.EqualFold(v.ports[i].Label, name) {
			return i
		}
	}
	return -1
}

// partnerWord reports whether name, not shadowed by an attribute or a
// label, means the partner docked at the port.
func (v portView) partnerWord(name string) bool {
	switch strings.ToLower(name) {
	case "target", "other":
		return true
	}
	return false
}

// exprDeps returns what e, an expression of the port, depends on.
func (v portView) exprDeps(e classad.Expr) deps {
	seen := map[string]bool{}
	return v.textDeps(e.String(), seen)
}

// attrDeps returns what the port's attribute name depends on.
func (v portView) attrDeps(name string, seen map[string]bool) deps {
	key := strings.ToLower(name)
	if seen[key] {
		return deps{}
	}
	seen[key] = true
	e, ok := v.lookup(name)
	if !ok {
		return deps{}
	}
	return v.textDeps(e.String(), seen)
}

// nameDeps returns what a bare name read in the port depends on.
func (v portView) nameDeps(name string, seen map[string]bool) deps {
	if _, ok := v.lookup(name); ok {
		return v.attrDeps(name, seen)
	}
	if l := v.label(name); l >= 0 {
		return deps{labels: 1 << l}
	}
	switch strings.ToLower(name) {
	case "self", "my":
		return deps{}
	case "parent", "root":
		return deps{opaque: true}
	}
	return deps{partner: true} // TARGET, other, or the fallback to the partner
}

func (v portView) textDeps(text string, seen map[string]bool) deps {
	var d deps
	ts := exprtext.Scan(text)
	for i, t := range ts {
		if t.Kind != exprtext.Ident || exprtext.Keyword(t.Text) {
			continue
		}
		if i+1 < len(ts) && ts[i+1].Is("(") {
			d.opaque = true
			continue
		}
		if i > 0 && ts[i-1].Is(".") {
			// A selection: what it reads depends on its base.
			if i < 2 || ts[i-2].Kind != exprtext.Ident {
				continue // a field of a computed value, covered by the value
			}
			base := ts[i-2].Text
			if _, own := v.lookup(base); !own && v.label(base) < 0 {
				switch strings.ToLower(base) {
				case "self", "my":
					d.add(v.attrDeps(t.Text, seen))
				}
			}
			continue
		}
		d.add(v.nameDeps(t.Text, seen))
	}
	return d
}

// bound is one conjunct of a constraint that bounds an attribute of the
// partner: partner.attr op rhs, where rhs is an expression of the port.
type bound struct {
	attr string // lower-case
	op   string // with the partner's attribute on the left
	rhs  classad.Expr
	deps deps // of rhs
}

var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// bounds returns the conjuncts of the port's constraint that are bounds on
// the partner's attributes.
func (v portView) bounds() []bound {
	p := v.ports[v.k]
	e, ok := p.own(v.ad).Lookup(p.Constraint)
	if p.Constraint == "" || !ok {
		return nil
	}
	text := e.String()
	var out []bound
	for _, c := range exprtext.Conjuncts(exprtext.Scan(text)) {
		if b, ok := v.boundOf(text, c); ok {
			out = append(out, b)
		}
	}
	return out
}

// boundOf reads one conjunct as a bound, if it is one.
func (v portView) boundOf(text string, ts []exprtext.Token) (bound, bool) {
	at, depth := -1, 0
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
		case "==", "!=", "<", "<=", ">", ">=":
			if depth == 0 {
				if at >= 0 {
					return bound{}, false
				}
				at = i
			}
		case "&", "|", "^", "?", ":", "?:", "=?=", "=!=", "||", "&&":
			if depth == 0 {
				return bound{}, false
			}
		}
	}
	if at <= 0 || at == len(ts)-1 {
		return bound{}, false
	}
	op := ts[at].Text
	left, right := ts[:at], ts[at+1:]
	attr, ok := v.partnerAttr(left)
	rest := right
	if !ok {
		if attr, ok = v.partnerAttr(right); !ok {
			return bound{}, false
		}
		rest, op = left, flipped[op]
	}
	rhs, err := classad.ParseExpr(text[rest[0].Start:rest[len(rest)-1].End])
	if err != nil {
		return bound{}, false
	}
	return bound{attr: strings.ToLower(attr), op: op, rhs: rhs, deps: v.exprDeps(rhs)}, true
}

// partnerAttr reports whether ts is exactly X.name with X the port's own
// label (or TARGET, other), not shadowed by an attribute, or a bare name
// found nowhere in the port's scopes, which is looked up in the partner;
// and returns the partner's attribute name.
func (v portView) partnerAttr(ts []exprtext.Token) (string, bool) {
	if len(ts) == 1 && ts[0].Kind == exprtext.Ident {
		name := ts[0].Text
		if _, own := v.lookup(name); own || exprtext.Keyword(name) || v.label(name) >= 0 {
			return "", false
		}
		switch strings.ToLower(name) {
		case "self", "my", "target", "other", "parent", "root":
			return "", false
		}
		return name, true
	}
	if len(ts) != 3 || ts[0].Kind != exprtext.Ident || !ts[1].Is(".") || ts[2].Kind != exprtext.Ident {
		return "", false
	}
	x := ts[0].Text
	if _, own := v.lookup(x); own {
		return "", false
	}
	if l := v.label(x); l >= 0 {
		return ts[2].Text, l == v.k
	}
	return ts[2].Text, v.partnerWord(x)
}

// shunt is an attribute of a port that is another port's partner's
// attribute plus a constant (HostId = Cpu.Key + 10): constraints on it
// translate into constraints on that attribute (the thesis's §5.5.1).
type shunt struct {
	from   int    // the port whose label it reads
	attr   string // the partner's attribute, lower-case
	offset float64
}

// shuntOf reads the port's attribute name as a translation, if it is one.
func (v portView) shuntOf(name string) (shunt, bool) {
	e, ok := v.lookup(name)
	if !ok {
		return shunt{}, false
	}
	ts := exprtext.Scan(e.String())
	for len(ts) >= 2 && exprtext.Enclosed(ts) {
		ts = ts[1 : len(ts)-1]
	}
	sign := 1.0
	var num []exprtext.Token
	switch {
	case len(ts) == 3:
	case len(ts) == 5 && ts[4].Kind == exprtext.Number && (ts[3].Is("+") || ts[3].Is("-")):
		num = ts[4:]
		if ts[3].Text == "-" {
			sign = -1
		}
	case len(ts) == 5 && ts[0].Kind == exprtext.Number && ts[1].Is("+"):
		num, ts = ts[:1], ts[2:]
	default:
		return shunt{}, false
	}
	if ts[0].Kind != exprtext.Ident || !ts[1].Is(".") || ts[2].Kind != exprtext.Ident {
		return shunt{}, false
	}
	from := v.label(ts[0].Text)
	if _, own := v.lookup(ts[0].Text); own || from < 0 || from == v.k {
		return shunt{}, false
	}
	s := shunt{from: from, attr: strings.ToLower(ts[2].Text)}
	if num != nil {
		x, err := classad.ParseExpr(num[0].Text)
		if err != nil {
			return shunt{}, false
		}
		f, ok := x.AsLiteral()
		if !ok {
			return shunt{}, false
		}
		n, ok := f.RealValue()
		if !ok {
			return shunt{}, false
		}
		s.offset = sign * n
	}
	return s, true
}

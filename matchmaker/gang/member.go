package gang

import "harrier.dev/harrier/classad"

// A member is an ad placed for gangmatching: for each of its ports, a
// context binding the labels in scope there (the ports before it and
// itself) and naming the partner docked at the port as its target, the
// ad placed in that context, and the port placed in the ad. It is the
// thesis's Figure 32 environment, built once per ad and rebound as
// partners dock and leave rather than rebuilt.
type member struct {
	ad    *classad.ClassAd
	ports []Port
	cand  int // the candidate's number, -1 for a request
	rid0  int // the number of its port 0 among the candidate ports
	ctx   []*classad.Context
	adIn  []classad.Scope // the ad in ctx[k]
	port  []classad.Scope // port k in adIn[k]; the ad itself for the implicit port
	expr  []classad.Expr  // port k as a value, for the partners' labels
	// inGang is set while the member is docked in the gang being marshalled.
	inGang bool
	// docked has bit k set while port k is docked.
	docked uint64
	// bounds and deps cache what the scan of the ports' expressions finds.
	bounds [][]bound
	deps   map[depKey]deps
}

type depKey struct {
	k    int
	attr string
}

// undefinedExpr is what an undocked label means.
var undefinedExpr = classad.Literal(classad.Undefined())

func newMember(ad *classad.ClassAd, ports []Port, cand int) *member {
	n := len(ports)
	mb := &member{ad: ad, ports: ports, cand: cand,
		ctx: make([]*classad.Context, n), adIn: make([]classad.Scope, n),
		port: make([]classad.Scope, n), expr: make([]classad.Expr, n)}
	for k, p := range ports {
		x := classad.NewContext()
		if !p.Implicit() {
			for i := 0; i <= k; i++ {
				x.Set(ports[i].Label, undefinedExpr)
			}
		}
		mb.ctx[k] = x
		mb.adIn[k].PlaceIn(ad, x)
		if p.Implicit() {
			mb.port[k].PlaceIn(ad, x)
		} else {
			mb.port[k].Place(p.Ad, &mb.adIn[k])
		}
		mb.expr[k] = classad.Literal(mb.port[k].Value())
	}
	return mb
}

func (mb *member) view(k int) portView { return portView{ad: mb.ad, ports: mb.ports, k: k} }

// boundsOf returns the bounds of port k's constraint on its partner.
func (mb *member) boundsOf(k int) []bound {
	if mb.bounds == nil {
		mb.bounds = make([][]bound, len(mb.ports))
	}
	if mb.bounds[k] == nil {
		mb.bounds[k] = append(mb.view(k).bounds(), bound{}) // never nil once read
	}
	return mb.bounds[k][:len(mb.bounds[k])-1]
}

// attrDeps returns what port k's view of attribute attr depends on.
func (mb *member) attrDeps(k int, attr string) deps {
	key := depKey{k, attr}
	if d, ok := mb.deps[key]; ok {
		return d
	}
	if mb.deps == nil {
		mb.deps = map[depKey]deps{}
	}
	d := mb.view(k).attrDeps(attr, map[string]bool{})
	mb.deps[key] = d
	return d
}

// bind makes port k's label (in scope from k to the last port) and
// target mean e and t.
func (mb *member) bind(k int, e classad.Expr, t *classad.Scope) {
	if t == nil {
		mb.docked &^= 1 << k
	} else {
		mb.docked |= 1 << k
	}
	if !mb.ports[k].Implicit() {
		for i := k; i < len(mb.ports); i++ {
			mb.ctx[i].Set(mb.ports[k].Label, e)
		}
	}
	mb.ctx[k].SetTarget(t)
}

// dock docks port k of a with port j of b.
func dock(a *member, k int, b *member, j int) {
	a.bind(k, b.expr[j], &b.port[j])
	b.bind(j, a.expr[k], &a.port[k])
}

// undock undoes dock.
func undock(a *member, k int, b *member, j int) {
	a.bind(k, undefinedExpr, nil)
	b.bind(j, undefinedExpr, nil)
}

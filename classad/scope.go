package classad

import "unsafe"

// Scopes and contexts let a caller build an evaluation environment that
// the text of the ads does not give, as a gangmatcher does (Raman's thesis,
// Figure 32): each port of each ad of a gang is placed in a context that
// binds the port labels in scope there to the partners' docked ports, and
// whose target is the partner docked at the port.
//
// A Scope is an ad placed under an enclosing scope: a name the ad lacks is
// looked up in the enclosing scopes in turn. The outermost scope of a
// chain is a Context: its names are ordinary attributes (labels bound with
// Set), and its target is what TARGET and other mean anywhere in the
// chain; a bare name found nowhere in the chain is looked up in the target
// and the scopes enclosing it, up to (not into) the target's own context,
// as it is looked up in the other ad of a match.
//
// Scopes and contexts are changed between evaluations, never during one or
// concurrently with one; the values that Value returns refer to them and
// see the changes. They must not be copied after first use.

// Scope is a ClassAd placed in an evaluation environment. The zero Scope
// holds no ad.
type Scope struct {
	r adRef
}

// Place puts ad in s, enclosed by parent (nil for none).
func (s *Scope) Place(ad *ClassAd, parent *Scope) {
	s.r.ad = ad
	s.r.parent = nil
	if parent != nil {
		s.r.parent = &parent.r
	}
}

// PlaceIn puts ad in s, enclosed by the context x.
func (s *Scope) PlaceIn(ad *ClassAd, x *Context) { s.Place(ad, &x.scope) }

// Ad returns the ad placed in s.
func (s *Scope) Ad() *ClassAd { return s.r.ad }

// Value returns s as a ClassAd value: selecting from it looks in s's ad and
// then in the scopes enclosing it.
func (s *Scope) Value() Value {
	if s.r.ad == nil {
		return Value{}
	}
	return adValue(&s.r)
}

// Context is the outermost scope of an evaluation environment: an ad of
// its own, whose attributes bind names for everything placed in it, and a
// target.
type Context struct {
	ad     ClassAd // first, so that evalCtx.targetOf can find the Context from it
	scope  Scope
	target *adRef
	funcs  []namedFunc // see SetFunc
	// relNumbers: see SetRelTimesAsNumbers.
	relNumbers bool
}

// NewContext returns a context with no names and no target.
func NewContext() *Context {
	x := &Context{}
	x.ad.self.ad = &x.ad
	x.ad.context = true
	x.scope.r.ad = &x.ad
	return x
}

// Set binds name to e in x. Rebinding a name to an expression made
// beforehand (Literal(s.Value())) does not allocate.
func (x *Context) Set(name string, e Expr) { x.ad.Set(name, e) }

// SetTarget makes t what TARGET means in x (nil for nothing).
func (x *Context) SetTarget(t *Scope) {
	x.target = nil
	if t != nil && t.r.ad != nil {
		x.target = &t.r
	}
}

// EvalIn evaluates the attribute name as s sees it: found in s's ad or
// the nearest enclosing scope that has it, and evaluated there. A name
// found nowhere is undefined.
func (m *Matcher) EvalIn(s *Scope, name string) Value {
	m.c.reset(nil, nil)
	v, _ := m.c.lookupChain(&s.r, name, hashName(name))
	return m.c.result(v)
}

// EvalExprIn evaluates e in s, as if it were an attribute of s's ad.
func (m *Matcher) EvalExprIn(s *Scope, e Expr) Value {
	if e.n == nil || s.r.ad == nil {
		return Value{}
	}
	m.c.reset(nil, nil)
	return m.c.result(e.n.eval(&m.c, &s.r))
}

// targetOf finds a Context from its ad: the ad must come first.
const _ uintptr = -unsafe.Offsetof(Context{}.ad)

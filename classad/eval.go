package classad

import (
	"sync"
	"unsafe"
)

// Limits that keep evaluation of hostile ads finite.
const (
	// maxEvalDepth bounds attribute references in progress at once.
	maxEvalDepth = 512
	// maxSteps bounds attribute evaluations per top-level evaluation, so
	// that non-circular but exponential ads (a = b + b; b = c + c; ...)
	// end in error rather than running for years.
	maxSteps = 1 << 20
	// maxString bounds strings built during evaluation.
	maxString = 1 << 24
	// maxBytes bounds the bytes of strings built in one evaluation.
	maxBytes = 1 << 26
)

// frame marks an attribute whose evaluation is in progress.
type frame struct {
	ad *ClassAd
	i  int
}

// evalCtx is the state of one top-level evaluation: the two ads of a match
// (MY and TARGET; target may be nil) and the in-progress attributes used to
// detect circular references.
type evalCtx struct {
	my, target *ClassAd
	// matchAd encloses MY and TARGET during a match, as libclassad's
	// match ad does: root, .name and the parent of either ad mean it. It
	// holds nothing.
	matchAd    ClassAd
	matchScope adRef
	// aborted is set by what makes libclassad's whole evaluation fail
	// rather than give an error value; the evaluation then ends in error
	// however the value was used.
	aborted bool
	stack   []frame
	steps   int
	bytes   int
	buf     [16]frame
}

var ctxPool = sync.Pool{New: func() any { return new(evalCtx) }}

func getCtx(my, target *ClassAd) *evalCtx {
	c := ctxPool.Get().(*evalCtx)
	c.reset(my, target)
	return c
}

func putCtx(c *evalCtx) {
	c.my, c.target = nil, nil
	ctxPool.Put(c)
}

func (c *evalCtx) reset(my, target *ClassAd) {
	c.my, c.target = my, target
	c.aborted = false
	c.matchScope.ad = &c.matchAd
	c.stack = c.buf[:0]
	c.steps = 0
	c.bytes = 0
}

// charge counts n bytes of built strings against the evaluation's budget
// and reports whether they fit.
func (c *evalCtx) charge(n int) bool {
	c.bytes += n
	return c.bytes <= maxBytes
}

// result is v, or error if the evaluation was aborted.
func (c *evalCtx) result(v Value) Value {
	if c.aborted {
		return Value{kind: ErrorKind}
	}
	return v
}

// top returns the outermost scope of s.
func top(s *adRef) *adRef {
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// root returns what root means in scope s: the outermost ad, or during a
// match the match ad around both.
func (c *evalCtx) root(s *adRef) *adRef {
	if c.target != nil && c.targetOf(s) != nil {
		return &c.matchScope
	}
	return top(s)
}

// parent returns the enclosing scope of s, the match ad for MY and TARGET
// during a match.
func (c *evalCtx) parent(s *adRef) *adRef {
	if s.parent == nil && c.target != nil && (s.ad == c.my || s.ad == c.target) {
		return &c.matchScope
	}
	return s.parent
}

// targetOf returns the scope that TARGET means for an expression in scope
// s: the other ad of a match, or the target of the Context that s is
// placed in.
func (c *evalCtx) targetOf(s *adRef) *adRef {
	t := top(s).ad
	switch {
	case c.target == nil:
	case t == c.my:
		return c.target.root()
	case t == c.target:
		return c.my.root()
	}
	if t.context {
		return (*Context)(unsafe.Pointer(t)).target
	}
	return nil
}

// evalAttr evaluates attribute i of scope sc, in that scope. A circular
// reference evaluates to undefined, as in libclassad.
func (c *evalCtx) evalAttr(sc *adRef, i int) Value {
	n := sc.ad.attrs[i].expr.n
	switch n := n.(type) {
	case nil:
		return Value{}
	case *litNode:
		return n.v
	case *foldNode:
		return n.v
	}
	c.steps++
	if c.steps > maxSteps || len(c.stack) >= maxEvalDepth {
		return Value{kind: ErrorKind}
	}
	for _, f := range c.stack {
		if f.i == i && f.ad == sc.ad {
			return Value{} // a circular reference is undefined, as in libclassad
		}
	}
	c.stack = append(c.stack, frame{sc.ad, i})
	v := n.eval(c, sc)
	c.stack = c.stack[:len(c.stack)-1]
	return v
}

// shadowed reports whether the scope word name is an attribute of s or
// its parents.
func shadowed(s *adRef, name string, h uint32) bool {
	for sc := s; sc != nil; sc = sc.parent {
		if sc.ad.scoped && sc.ad.find(name, h) >= 0 {
			return true
		}
	}
	return false
}

// lookupChain finds name in s or its lexical parents.
func (c *evalCtx) lookupChain(s *adRef, name string, h uint32) (Value, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if i := sc.ad.find(name, h); i >= 0 {
			return c.evalAttr(sc, i), true
		}
	}
	return Value{}, false
}

// Eval evaluates the attribute name in the ad's own scope, with no target.
// A missing attribute is undefined.
func (ad *ClassAd) Eval(name string) Value { return ad.EvalAttrAgainst(name, nil) }

// EvalAttrAgainst evaluates the attribute name with MY = ad and TARGET =
// target (which may be nil).
func (ad *ClassAd) EvalAttrAgainst(name string, target *ClassAd) Value {
	i := ad.find(name, hashName(name))
	if i < 0 {
		return Value{}
	}
	c := getCtx(ad, target)
	v := c.result(c.evalAttr(ad.root(), i))
	putCtx(c)
	return v
}

// EvalExpr evaluates e with MY = ad and TARGET = target (which may be nil).
func (ad *ClassAd) EvalExpr(e Expr, target *ClassAd) Value {
	if e.n == nil {
		return Value{}
	}
	if ad == nil {
		ad = New()
	}
	c := getCtx(ad, target)
	v := c.result(e.n.eval(c, ad.root()))
	putCtx(c)
	return v
}

// EvalString evaluates name and reports whether it is a string.
func (ad *ClassAd) EvalString(name string) (string, bool) { return ad.Eval(name).StringValue() }

// EvalInt evaluates name and reports whether it is an integer. Reals are
// truncated toward zero and booleans give 0 or 1, as HTCondor's EvalInteger.
func (ad *ClassAd) EvalInt(name string) (int64, bool) {
	v := ad.Eval(name)
	if b, ok := v.BoolValue(); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return v.IntValue()
}

// EvalReal evaluates name and reports whether it is a number; integers are
// converted and booleans give 0 or 1.
func (ad *ClassAd) EvalReal(name string) (float64, bool) { return toFloat(ad.Eval(name)) }

// EvalBool evaluates name and reports whether it is a boolean. Numbers count
// as booleans (non-zero is true), as in HTCondor's EvalBool.
func (ad *ClassAd) EvalBool(name string) (bool, bool) {
	b, st := truth(ad.Eval(name))
	return b, st == truthBool
}

// toFloat converts numbers and booleans to float64.
func toFloat(v Value) (float64, bool) {
	switch v.kind {
	case BoolKind:
		if v.b() {
			return 1, true
		}
		return 0, true
	case IntKind:
		return float64(v.i()), true
	case RealKind:
		return v.f(), true
	}
	return 0, false
}

func (n *litNode) eval(*evalCtx, *adRef) Value { return n.v }

func (n *attrNode) eval(c *evalCtx, s *adRef) Value {
	if n.abs {
		r := c.root(s)
		if i := r.ad.find(n.name, n.hash); i >= 0 {
			return c.evalAttr(r, i)
		}
		return Value{}
	}
	if v, ok := c.lookupChain(s, n.name, n.hash); ok {
		return v
	}
	// Not in lexical scope: fall back to the target, as libclassad's
	// alternate scope does during matching; a target placed in a Context
	// is searched up to its context, not into it.
	for t := c.targetOf(s); t != nil && !t.ad.context; t = t.parent {
		if i := t.ad.find(n.name, n.hash); i >= 0 {
			return c.evalAttr(t, i)
		}
	}
	return Value{}
}

// scope returns the ad that the scope word denotes, or nil.
func (n *scopeNode) scope(c *evalCtx, s *adRef) *adRef {
	switch n.kind {
	case scopeSelf:
		return s
	case scopeTarget:
		return c.targetOf(s)
	case scopeParent:
		return c.parent(s)
	case scopeRoot:
		return c.root(s)
	}
	return nil
}

func (n *scopeNode) eval(c *evalCtx, s *adRef) Value {
	if shadowed(s, n.word, n.hash) {
		v, _ := c.lookupChain(s, n.word, n.hash)
		return v
	}
	r := n.scope(c, s)
	if r == nil {
		return Value{}
	}
	return adValue(r)
}

func (n *selectNode) eval(c *evalCtx, s *adRef) Value {
	if sn, ok := n.x.(*scopeNode); ok && !shadowed(s, sn.word, sn.hash) {
		// MY.x, TARGET.x: skip building the intermediate value.
		r := sn.scope(c, s)
		if r == nil {
			return Value{}
		}
		v, _ := c.lookupChain(r, n.name, n.hash)
		return v
	}
	// A base whose evaluation fails outright selects undefined, as in
	// libclassad (see evalCtx.aborted).
	aborted := c.aborted
	c.aborted = false
	base := n.x.eval(c, s)
	if c.aborted {
		c.aborted = aborted
		return Value{}
	}
	c.aborted = aborted
	return c.selectValue(base, n.name, n.hash)
}

// selectValue evaluates base.name. Selecting from a list selects from each
// element, so {[a=1],[a=2]}.a is {1,2}.
func (c *evalCtx) selectValue(base Value, name string, h uint32) Value {
	switch base.kind {
	case AdKind:
		v, _ := c.lookupChain(base.scope(), name, h)
		return v
	case ListKind:
		if (*listValue)(base.ptr).failed {
			return Value{}
		}
		elems := base.elems()
		out := make([]Value, len(elems))
		for i, e := range elems {
			out[i] = c.selectValue(e, name, h)
			if out[i].kind == RelTimeKind {
				// libclassad rebuilds relative times here from whole seconds.
				out[i] = RelTime(float64(cInt32(out[i].f())))
			}
		}
		return listOf(out)
	case UndefinedKind:
		return Value{}
	}
	return Value{kind: ErrorKind}
}

func (n *indexNode) eval(c *evalCtx, s *adRef) Value {
	x := n.x.eval(c, s)
	i := n.i.eval(c, s)
	if x.kind == ErrorKind || i.kind == ErrorKind {
		return Value{kind: ErrorKind}
	}
	if x.kind == UndefinedKind || i.kind == UndefinedKind {
		return Value{}
	}
	switch {
	case x.kind == ListKind && i.kind == IntKind:
		elems := x.elems()
		if k := int64(int32(i.i())); k >= 0 && k < int64(len(elems)) { // a C int, as in libclassad
			return elems[k]
		}
	case x.kind == AdKind && i.kind == StringKind:
		// Only the ad itself, not its enclosing ads, as in libclassad.
		sc := x.scope()
		if j := sc.ad.find(i.s(), hashName(i.s())); j >= 0 {
			return c.evalAttr(sc, j)
		}
		return Value{}
	}
	return Value{kind: ErrorKind}
}

func (n *unaryNode) eval(c *evalCtx, s *adRef) Value { return unaryOp(n.op, n.x.eval(c, s)) }

func (n *binaryNode) eval(c *evalCtx, s *adRef) Value {
	switch n.op {
	case opAnd:
		return evalAnd(c, s, n.l, n.r)
	case opOr:
		return evalOr(c, s, n.l, n.r)
	}
	l, r := n.l.eval(c, s), n.r.eval(c, s)
	v := applyBinary(n.op, l, r)
	if v.kind == ErrorKind {
		return relTimesAsNumbers(c, s, n.op, l, r, v)
	}
	return v
}

func (n *constRNode) eval(c *evalCtx, s *adRef) Value {
	l := n.l.eval(c, s)
	v := applyBinary(n.op, l, n.k)
	if v.kind == ErrorKind {
		return relTimesAsNumbers(c, s, n.op, l, n.k, v)
	}
	return v
}

// applyBinary is binaryOp with fast paths for the comparisons and integer
// arithmetic that Requirements are made of.
func applyBinary(o op, l, r Value) Value {
	if l.kind == IntKind && r.kind == IntKind {
		a, b := l.i(), r.i()
		switch o {
		case opLt:
			return Bool(a < b)
		case opLe:
			return Bool(a <= b)
		case opGt:
			return Bool(a > b)
		case opGe:
			return Bool(a >= b)
		case opEq:
			return Bool(a == b)
		case opNe:
			return Bool(a != b)
		case opAdd:
			return Int(a + b)
		case opSub:
			return Int(a - b)
		case opMul:
			return Int(a * b)
		}
	}
	if l.kind == StringKind && r.kind == StringKind && (o == opEq || o == opNe) {
		return Bool(equalFold(l.s(), r.s()) == (o == opEq))
	}
	if (l.kind == RealKind || r.kind == RealKind) && o >= opLt && o <= opGe {
		if a, ok := l.RealValue(); ok {
			if b, ok := r.RealValue(); ok {
				return cmpFloatOp(o, a, b)
			}
		}
	}
	return binaryOp(o, l, r)
}

func (n *condNode) eval(c *evalCtx, s *adRef) Value {
	b, st := truth(n.c.eval(c, s))
	switch {
	case st == truthUndefined:
		return Value{}
	case st == truthError:
		return Value{kind: ErrorKind}
	case b:
		return n.a.eval(c, s)
	}
	return n.b.eval(c, s)
}

func (n *elvisNode) eval(c *evalCtx, s *adRef) Value {
	if v := n.a.eval(c, s); v.kind != UndefinedKind {
		return v
	}
	return n.b.eval(c, s)
}

func (n *foldNode) eval(*evalCtx, *adRef) Value { return n.v }

func (n *listNode) eval(c *evalCtx, s *adRef) Value {
	// libclassad evaluates a list's elements only when they are used, so
	// an element that would fail the whole evaluation fails nothing here.
	out := make([]Value, len(n.elems))
	if c == nil { // folding a constant list at parse time
		for i, e := range n.elems {
			out[i] = e.eval(c, s)
		}
	} else {
		aborted := c.aborted
		c.aborted = false
		for i, e := range n.elems {
			out[i] = e.eval(c, s)
		}
		failed := c.aborted
		c.aborted = aborted
		return Value{kind: ListKind, ptr: unsafe.Pointer(&listValue{elems: out, src: n.elems, failed: failed})}
	}
	return Value{kind: ListKind, ptr: unsafe.Pointer(&listValue{elems: out, src: n.elems})}
}

func (n *adNode) eval(_ *evalCtx, s *adRef) Value {
	return adValue(&adRef{ad: n.ad, parent: s})
}

func (n *callNode) eval(c *evalCtx, s *adRef) Value {
	if n.fn == nil {
		if f := contextFunc(s, n.name); f != nil {
			return f(Call{c: c, s: s, args: n.args})
		}
		return Value{kind: ErrorKind}
	}
	return n.fn(c, s, n.args)
}

package classad

import "unsafe"

// Functions added by an evaluation environment. The language's builtins
// are the same for everyone who parses an expression; an embedder that
// evaluates expressions of its own in a Context (a reservation policy, for
// PluS's plus_rsvutil and evaluateList) may add functions there, seen only
// by what is evaluated in that context. A call is bound to a builtin when
// it is parsed; only a name that is no builtin is looked up in the context
// at evaluation, so matching ads pays nothing for this.

// A Func is a function a Context adds to the language. It is called with
// the call's arguments unevaluated, as builtins are, so that it can bind
// names around an argument before evaluating it.
type Func func(call Call) Value

// Call is one call of a Func: its argument expressions and the scope the
// call is evaluated in. It is valid only during the call.
type Call struct {
	c    *evalCtx
	s    *adRef
	args []node
}

// Len returns the number of arguments.
func (k Call) Len() int { return len(k.args) }

// Arg evaluates argument i (below Len) where the call is made.
func (k Call) Arg(i int) Value { return k.args[i].eval(k.c, k.s) }

// EvalBound evaluates the attribute attr, found where the call is made
// (in its scope or an enclosing one), in a scope nested in the one that
// defines it where name is bound to v: a reference to name in attr's
// expression means v, every other name what it means for attr. It is the
// map of PluS's evaluateList(list, "job", "jobFinishTime"). An attribute
// found nowhere is undefined.
func (k Call) EvalBound(attr, name string, v Value) Value {
	h := hashName(attr)
	for sc := k.s; sc != nil; sc = sc.parent {
		i := sc.ad.find(attr, h)
		if i < 0 {
			continue
		}
		k.c.steps++
		if k.c.steps > maxSteps || len(k.c.stack) >= maxEvalDepth {
			return Value{kind: ErrorKind}
		}
		binding := New()
		binding.SetValue(name, v)
		n := sc.ad.attrs[i].expr.n
		if n == nil {
			return Value{}
		}
		return n.eval(k.c, &adRef{ad: binding, parent: sc})
	}
	return Value{}
}

// contextFunc is a call's fallback when its name is no builtin: the Func
// the Context around s binds to name, if any.
func contextFunc(s *adRef, name string) Func {
	if s == nil {
		return nil
	}
	t := top(s).ad
	if !t.context {
		return nil
	}
	x := (*Context)(unsafe.Pointer(t))
	for _, f := range x.funcs {
		if equalFold(f.name, name) {
			return f.fn
		}
	}
	return nil
}

// namedFunc is a Func a Context binds to a name.
type namedFunc struct {
	name string
	fn   Func
}

// SetFunc adds fn to the language as name (compared ignoring case) for
// the expressions evaluated in x; a builtin of that name takes precedence.
func (x *Context) SetFunc(name string, fn Func) {
	for i := range x.funcs {
		if equalFold(x.funcs[i].name, name) {
			x.funcs[i].fn = fn
			return
		}
	}
	x.funcs = append(x.funcs, namedFunc{name, fn})
}

// ListOf returns a list value holding vs without copying it: the caller
// must not change vs[:len(vs)] afterwards (appending past it is fine), so
// that growing lists can be shared between evaluations.
func ListOf(vs []Value) Value { return listOf(vs) }

// SetRelTimesAsNumbers lets, in the expressions evaluated in x, relative
// times and numbers mix where an operator would otherwise find it an
// error: a relative time beside a number stands for its seconds, and a
// number beside an absolute time for that many seconds. relTime("0:30:00")
// is the real 1800 (as in libclassad) while the difference of two
// absolute times is a relative time, and PluS's policies compare the two
// (prev <= MaxPeriod) and add the one to an absolute time
// (job.startTime + defaultWalltime).
func (x *Context) SetRelTimesAsNumbers(on bool) { x.relNumbers = on }

// relTimesAsNumbers is the result of o on l and r, which gave bad (an
// error), when the Context around s lets times and numbers mix.
func relTimesAsNumbers(c *evalCtx, s *adRef, o op, l, r, bad Value) Value {
	if c == nil || s == nil {
		return bad
	}
	lt, rt := l.kind == AbsTimeKind || l.kind == RelTimeKind, r.kind == AbsTimeKind || r.kind == RelTimeKind
	ln, rn := l.kind == IntKind || l.kind == RealKind, r.kind == IntKind || r.kind == RealKind
	if !(lt && rn || ln && rt) {
		return bad
	}
	t := top(s).ad
	if !t.context || !(*Context)(unsafe.Pointer(t)).relNumbers {
		return bad
	}
	switch {
	case l.kind == AbsTimeKind:
		f, _ := r.RealValue()
		r = RelTime(f)
	case r.kind == AbsTimeKind:
		f, _ := l.RealValue()
		l = RelTime(f)
	case l.kind == RelTimeKind:
		l = Real(l.f())
	default:
		r = Real(r.f())
	}
	return applyBinary(o, l, r)
}

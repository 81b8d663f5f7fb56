package classad

func registerMisc(m map[string]builtin) {
	m["eval"] = evalFn
	m["unparse"] = unparse
	m["debug"] = lazy(1, 1, func(_ *evalCtx, a []Value) Value { return a[0] })
	m["evalineachcontext"] = func(c *evalCtx, s *adRef, args []node) Value {
		return eachContext(c, s, args, false)
	}
	m["countmatches"] = func(c *evalCtx, s *adRef, args []node) Value {
		return eachContext(c, s, args, true)
	}
}

// eachContext evaluates args[0] in the scope of every ad in the list
// args[1]: evalInEachContext returns the list of results, countMatches the
// number that are true.
func eachContext(c *evalCtx, s *adRef, args []node, count bool) Value {
	if len(args) != 2 {
		return Value{kind: ErrorKind}
	}
	l := args[1].eval(c, s)
	switch l.kind {
	case ListKind:
	case UndefinedKind:
		return l
	default:
		return Value{kind: ErrorKind}
	}
	elems := l.elems()
	var out []Value
	if !count {
		out = make([]Value, len(elems))
	}
	n := 0
	for i, e := range elems {
		v := Value{kind: ErrorKind}
		if e.kind == AdKind {
			v = args[0].eval(c, e.scope())
		} else if e.kind == UndefinedKind {
			v = Value{}
		}
		if count {
			if v.IsTrue() {
				n++
			}
		} else {
			out[i] = v
		}
	}
	if count {
		return Int(int64(n))
	}
	return listOf(out)
}

// evalFn parses its string argument and evaluates it in the caller's scope.
// The nesting of eval() calls counts against the evaluation limits.
func evalFn(c *evalCtx, s *adRef, args []node) Value {
	if len(args) != 1 {
		return Value{kind: ErrorKind}
	}
	// Like libclassad, eval parses the string form of any other value.
	src, ok := stringOf(args[0].eval(c, s))
	if !ok {
		return Value{kind: ErrorKind}
	}
	c.steps++
	if c.steps > maxSteps || len(c.stack) >= maxEvalDepth {
		return Value{kind: ErrorKind}
	}
	e, err := ParseExpr(src)
	if err != nil {
		return Value{kind: ErrorKind}
	}
	// Mark the nesting so that eval("eval(...)") chains stay bounded.
	c.stack = append(c.stack, frame{})
	r := e.n.eval(c, s)
	c.stack = c.stack[:len(c.stack)-1]
	return r
}

// unparse(attr) returns the text of the expression bound to attr in the
// ad the call is in (not its enclosing ads), "" if there is none or the
// argument is another reference (a.b, parent); any other argument is
// error, as in libclassad.
func unparse(c *evalCtx, s *adRef, args []node) Value {
	if len(args) != 1 {
		return Value{kind: ErrorKind}
	}
	p := printer{pretty: true}
	if *args[0].parens() > 0 {
		return Value{kind: ErrorKind}
	}
	switch n := args[0].(type) {
	case *attrNode:
		// Only the ad the expression is in, as libclassad looks.
		if i := s.ad.find(n.name, n.hash); i >= 0 && !n.abs {
			p.expr(s.ad.attrs[i].expr)
			return String(p.String())
		}
		return String("")
	case *selectNode, *scopeNode:
		return String("") // libclassad unparses bare names only
	}
	return Value{kind: ErrorKind}
}

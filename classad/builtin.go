package classad

import (
	"strings"
)

// builtin is a function callable from expressions. It receives its argument
// expressions unevaluated, so that non-strict functions (ifThenElse,
// isUndefined, ...) can decide what to evaluate.
type builtin func(c *evalCtx, s *adRef, args []node) Value

// builtins maps lower-case function names to implementations. It is filled
// once by init and only read afterwards.
var builtins map[string]builtin

func lookupBuiltin(name string) builtin {
	return builtins[strings.ToLower(name)]
}

// evalArgs evaluates args into buf.
func evalArgs(c *evalCtx, s *adRef, args []node, buf []Value) []Value {
	for _, a := range args {
		buf = append(buf, a.eval(c, s))
	}
	return buf
}

// strict wraps f, which takes between lo and hi evaluated arguments (hi < 0
// means any number). A wrong argument count is error; otherwise an error
// argument makes the result error and then an undefined one undefined.
func strict(lo, hi int, f func(c *evalCtx, args []Value) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		var buf [4]Value
		vs, instead, ok := strictArgs(c, s, args, lo, hi, buf[:0])
		if !ok {
			return instead
		}
		return f(c, vs)
	}
}

// strictArgs evaluates args into buf for a strict function. If the count
// is wrong or an argument is error or undefined, it returns the result the
// function must give instead.
func strictArgs(c *evalCtx, s *adRef, args []node, lo, hi int, buf []Value) (vs []Value, instead Value, ok bool) {
	if len(args) < lo || hi >= 0 && len(args) > hi {
		return nil, Value{kind: ErrorKind}, false
	}
	vs = evalArgs(c, s, args, buf)
	undef := false
	for _, v := range vs {
		switch v.kind {
		case ErrorKind:
			return nil, v, false
		case UndefinedKind:
			undef = true
		}
	}
	if undef {
		return nil, Value{}, false
	}
	return vs, Value{}, true
}

// undefFirst wraps f like strict, but an undefined argument wins over an
// error one, as in some of libclassad's string builtins.
func undefFirst(lo, hi int, f func(c *evalCtx, args []Value) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		if len(args) < lo || hi >= 0 && len(args) > hi {
			return Value{kind: ErrorKind}
		}
		var buf [4]Value
		vs := evalArgs(c, s, args, buf[:0])
		bad := Value{}
		for _, v := range vs {
			switch v.kind {
			case UndefinedKind:
				return v
			case ErrorKind:
				bad = v
			}
		}
		if bad.kind == ErrorKind {
			return bad
		}
		return f(c, vs)
	}
}

// lazy wraps f, which takes between lo and hi evaluated arguments and
// handles undefined and error itself.
func lazy(lo, hi int, f func(c *evalCtx, args []Value) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		if len(args) < lo || hi >= 0 && len(args) > hi {
			return Value{kind: ErrorKind}
		}
		var buf [4]Value
		return f(c, evalArgs(c, s, args, buf[:0]))
	}
}

// isKind returns a type predicate: true iff the argument has one of kinds.
func isKind(kinds ...Kind) builtin {
	return lazy(1, 1, func(_ *evalCtx, a []Value) Value {
		for _, k := range kinds {
			if a[0].kind == k {
				return Bool(true)
			}
		}
		return Bool(false)
	})
}

func ifThenElse(c *evalCtx, s *adRef, args []node) Value {
	if len(args) != 3 {
		return Value{kind: ErrorKind}
	}
	b, st := truth(args[0].eval(c, s))
	switch {
	case st == truthUndefined:
		return Value{}
	case st == truthError:
		return Value{kind: ErrorKind}
	case b:
		return args[1].eval(c, s)
	}
	return args[2].eval(c, s)
}

func init() {
	builtins = map[string]builtin{}
	for name, f := range map[string]builtin{
		"isundefined": isKind(UndefinedKind),
		"iserror":     isKind(ErrorKind),
		"isstring":    isKind(StringKind),
		"isinteger":   isKind(IntKind),
		"isreal":      isKind(RealKind),
		"isboolean":   isKind(BoolKind),
		"islist":      isKind(ListKind),
		"isclassad":   isKind(AdKind),
		"isabstime":   isKind(AbsTimeKind),
		"isreltime":   isKind(RelTimeKind),
		"ifthenelse":  ifThenElse,
	} {
		builtins[name] = f
	}
	registerConversions(builtins)
	registerStrings(builtins)
	registerLists(builtins)
	registerMath(builtins)
	registerTime(builtins)
	registerMisc(builtins)
}

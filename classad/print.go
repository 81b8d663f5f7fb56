package classad

import (
	"math"
	"strconv"
	"strings"
)

// printer unparses expressions and values. In old mode strings use old
// ClassAd quoting, where only a double quote is escaped.
type printer struct {
	strings.Builder
	old bool
	// limit, if positive, stops printing once the output is longer, so
	// that values sharing sublists cannot print exponentially long.
	limit int
	// pretty lays lists and ads out over lines as libclassad's unparse()
	// does, indented from column indent.
	pretty bool
	indent int
}

// open starts a pretty list or ad at the indent for its kind (3 or 4
// columns in) and returns the indent to restore.
func (p *printer) open(step int, bracket byte) int {
	saved := p.indent
	p.indent += step
	p.newline()
	p.WriteByte(bracket)
	return saved
}

// item starts a pretty element one step further in.
func (p *printer) item(step int) {
	p.indent += step
	p.newline()
}

func (p *printer) close(step int, bracket byte, saved int) {
	p.indent -= step
	p.newline()
	p.WriteByte(bracket)
	p.indent = saved
}

func (p *printer) newline() {
	p.WriteByte('\n')
	for range p.indent {
		p.WriteByte(' ')
	}
}

// over reports whether the output has passed the limit.
func (p *printer) over() bool { return p.limit > 0 && p.Len() > p.limit }

func (p *printer) expr(e Expr) {
	if e.n == nil {
		p.WriteString("undefined")
		return
	}
	p.node(e.n)
}

// node prints n with its source parentheses.
func (p *printer) node(n node) {
	if p.over() {
		return
	}
	k := *n.parens()
	for range k {
		p.WriteByte('(')
	}
	n.print(p)
	for range k {
		p.WriteByte(')')
	}
}

func (p *printer) value(v Value) {
	if p.over() {
		return
	}
	switch v.kind {
	case UndefinedKind:
		p.WriteString("undefined")
	case ErrorKind:
		p.WriteString("error")
	case BoolKind:
		if v.b() {
			p.WriteString("true")
		} else {
			p.WriteString("false")
		}
	case IntKind:
		p.WriteString(strconv.FormatInt(v.i(), 10))
	case RealKind:
		if p.old {
			p.WriteString(formatReal(v.f()))
		} else {
			p.WriteString(formatRealLib(v.f()))
		}
	case StringKind:
		p.quote(v.s())
	case ListKind:
		p.WriteString("{ ")
		if src := (*listValue)(v.ptr).src; src != nil {
			for i, n := range src {
				if i > 0 {
					p.WriteByte(',')
				}
				p.node(n)
			}
		} else {
			for i, e := range v.elems() {
				if i > 0 {
					p.WriteByte(',')
				}
				p.value(e)
			}
		}
		p.WriteString(" }")
	case AdKind:
		p.classad(v.scope().ad)
	case AbsTimeKind:
		p.WriteString(`absTime(`)
		p.quote(formatAbsTime(v.i(), int(v.off)))
		p.WriteByte(')')
	case RelTimeKind:
		p.WriteString(`relTime(`)
		p.quote(formatRelTime(v.f(), true))
		p.WriteByte(')')
	}
}

func (p *printer) classad(ad *ClassAd) {
	if p.pretty {
		saved := p.open(4, '[')
		for i, a := range ad.attrs {
			if i > 0 {
				p.WriteString("; ")
			}
			p.item(4)
			p.name(a.name)
			p.WriteString(" = ")
			p.expr(a.expr)
			p.indent -= 4
		}
		p.close(0, ']', saved)
		return
	}
	p.WriteString("[ ")
	for i, a := range ad.attrs {
		if i > 0 {
			p.WriteString("; ")
		}
		p.name(a.name)
		p.WriteString(" = ")
		p.expr(a.expr)
	}
	p.WriteString(" ]")
}

// quote writes s as a string literal.
func (p *printer) quote(s string) {
	p.WriteByte('"')
	if p.old {
		p.WriteString(strings.ReplaceAll(s, `"`, `\"`))
	} else {
		p.escape(s, '"')
	}
	p.WriteByte('"')
}

// escape writes s with q escaped, as libclassad does: C escapes for the
// usual control characters and three octal digits for the other bytes
// outside printable ASCII.
func (p *printer) escape(s string, q byte) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case q, '\\':
			p.WriteByte('\\')
			p.WriteByte(c)
		case '\n':
			p.WriteString(`\n`)
		case '\t':
			p.WriteString(`\t`)
		case '\r':
			p.WriteString(`\r`)
		case '\b':
			p.WriteString(`\b`)
		case '\f':
			p.WriteString(`\f`)
		case '\v':
			p.WriteString(`\v`)
		case '\a':
			p.WriteString(`\a`)
		default:
			if c < ' ' || c >= 0x7f {
				p.WriteByte('\\')
				p.WriteString(strconv.FormatInt(int64(c)+01000, 8)[1:])
			} else {
				p.WriteByte(c)
			}
		}
	}
}

// name writes an attribute name where it is defined or referenced,
// quoting it if it is not a plain identifier or is a word libclassad
// reserves (parent among them, though it also names a scope).
func (p *printer) name(s string) {
	if isPlainName(s) && !isKeyword(s) && !equalFold(s, "parent") {
		p.WriteString(s)
		return
	}
	p.quoteName(s)
}

// selected writes the name after a '.'; libclassad leaves words such as
// true unquoted there. Names that are not identifiers are still quoted, so
// that what is printed reads back.
func (p *printer) selected(s string) {
	if isPlainName(s) {
		p.WriteString(s)
		return
	}
	p.quoteName(s)
}

func (p *printer) quoteName(s string) {
	p.WriteByte('\'')
	p.escape(s, '\'')
	p.WriteByte('\'')
}

func isPlainName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

func (n *litNode) print(p *printer) { p.value(n.v) }

func (n *attrNode) print(p *printer) {
	if n.abs {
		p.WriteByte('.')
	}
	p.name(n.name)
}

func (n *scopeNode) print(p *printer) {
	if n.kind == scopeParent {
		p.quoteName(n.word)
		return
	}
	p.WriteString(n.word)
}

func (n *selectNode) print(p *printer) {
	if isNumber(n.x) {
		// 0 .a must not print as 0.a, which reads as a malformed real.
		p.WriteByte('(')
		p.node(n.x)
		p.WriteByte(')')
	} else {
		p.node(n.x)
	}
	p.WriteByte('.')
	p.selected(n.name)
}

func (n *indexNode) print(p *printer) {
	p.node(n.x)
	p.WriteByte('[')
	p.node(n.i)
	p.WriteByte(']')
}

// A unary operator prints with a space before it, as in libclassad. A
// minus before a number also gets one after it, or it would read back as
// a negative number.
func (n *unaryNode) print(p *printer) {
	p.WriteByte(' ')
	p.WriteString(opText[n.op])
	if n.op == opNeg && isNumber(n.x) && !printsNegative(n.x) {
		p.WriteByte(' ')
	}
	p.node(n.x)
}

func (n *binaryNode) print(p *printer) {
	p.node(n.l)
	p.WriteByte(' ')
	p.WriteString(opText[n.op])
	p.WriteByte(' ')
	p.node(n.r)
}

func (n *condNode) print(p *printer) {
	p.node(n.c)
	p.WriteString(" ? ")
	p.node(n.a)
	p.WriteString(" : ")
	p.node(n.b)
}

func (n *elvisNode) print(p *printer) {
	p.node(n.a)
	p.WriteString(" ?: ")
	p.node(n.b)
}

func (n *foldNode) print(p *printer) { p.node(n.src) }

func (n *constRNode) print(p *printer) { n.src.print(p) }

func (n *listNode) print(p *printer) {
	if p.pretty {
		saved := p.open(3, '{')
		for i, e := range n.elems {
			if i > 0 {
				p.WriteByte(',')
			}
			p.item(3)
			p.node(e)
			p.indent -= 3
		}
		p.close(0, '}', saved)
		return
	}
	p.WriteString("{ ")
	for i, e := range n.elems {
		if i > 0 {
			p.WriteByte(',')
		}
		p.node(e)
	}
	p.WriteString(" }")
}

func (n *adNode) print(p *printer) { p.classad(n.ad) }

func (n *callNode) print(p *printer) {
	p.WriteString(n.name)
	p.WriteByte('(')
	for i, a := range n.args {
		if i > 0 {
			p.WriteByte(',')
		}
		p.node(a)
	}
	p.WriteByte(')')
}

// String prints ad in new syntax on one line: [ A = 1; B = "x" ].
func (ad *ClassAd) String() string {
	var p printer
	p.classad(ad)
	return p.String()
}

// MarshalOld prints ad in old syntax, one "Name = Expr" per line, each
// newline-terminated. Old syntax has no escape for a newline or for a
// backslash before a closing quote, so strings holding those do not read
// back as they were; use String or MarshalJSON to keep them.
func (ad *ClassAd) MarshalOld() string {
	p := printer{old: true}
	for _, a := range ad.attrs {
		p.name(a.name)
		p.WriteString(" = ")
		p.expr(a.expr)
		p.WriteByte('\n')
	}
	return p.String()
}

// printsNegative reports whether the number n prints with a minus sign.
func printsNegative(n node) bool {
	switch n := n.(type) {
	case *litNode:
		return n.v.kind == IntKind && n.v.i() < 0 || n.v.kind == RealKind && math.Signbit(n.v.f())
	case *foldNode:
		return printsNegative(n.src)
	}
	return false
}

// isNumber reports whether n prints as a bare number.
func isNumber(n node) bool {
	if *n.parens() > 0 {
		return false
	}
	switch n := n.(type) {
	case *litNode:
		return n.v.kind == IntKind || n.v.kind == RealKind
	case *foldNode:
		return isNumber(n.src)
	}
	return false
}

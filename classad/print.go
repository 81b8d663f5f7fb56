package classad

import (
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
		p.WriteString(formatReal(v.f()))
	case StringKind:
		p.quote(v.s())
	case ListKind:
		p.WriteString("{ ")
		for i, e := range v.elems() {
			if i > 0 {
				p.WriteByte(',')
			}
			p.value(e)
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
		p.quote(formatRelTime(v.f()))
		p.WriteByte(')')
	}
}

func (p *printer) classad(ad *ClassAd) {
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
			if c < ' ' || c == 0x7f {
				p.WriteByte('\\')
				p.WriteString(strconv.FormatInt(int64(c)+01000, 8)[1:])
			} else {
				p.WriteByte(c)
			}
		}
	}
}

// name writes an attribute name where it is defined, quoting it if it is
// not a plain identifier.
func (p *printer) name(s string) {
	if isPlainName(s) && !isKeyword(s) {
		p.WriteString(s)
		return
	}
	p.quoteName(s)
}

// ref writes an attribute name where it is referenced; scope words such as
// root must be quoted there too, or they would mean the scope.
func (p *printer) ref(s string) {
	if _, scope := scopeWord(s); isPlainName(s) && !isKeyword(s) && !scope {
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
	p.ref(n.name)
}

func (n *scopeNode) print(p *printer) { p.WriteString(n.word) }

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
	p.name(n.name)
}

func (n *indexNode) print(p *printer) {
	p.node(n.x)
	p.WriteByte('[')
	p.node(n.i)
	p.WriteByte(']')
}

func (n *unaryNode) print(p *printer) {
	p.WriteString(opText[n.op])
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

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
}

func (p *printer) expr(e Expr) {
	if e.n == nil {
		p.WriteString("undefined")
		return
	}
	e.n.print(p)
}

func (p *printer) value(v Value) {
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
		p.quote(v.str)
	case ListKind:
		p.WriteString("{ ")
		for i, e := range v.ref.(*listValue).elems {
			if i > 0 {
				p.WriteByte(',')
			}
			p.value(e)
		}
		p.WriteString(" }")
	case AdKind:
		p.classad(v.ref.(*adRef).ad)
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

// name writes an attribute name, quoting it if it is not a plain identifier.
func (p *printer) name(s string) {
	if isPlainName(s) {
		p.WriteString(s)
		return
	}
	p.WriteByte('\'')
	p.escape(s, '\'')
	p.WriteByte('\'')
}

func isPlainName(s string) bool {
	if s == "" || !isIdentStart(s[0]) || isKeyword(s) {
		return false
	}
	if _, ok := scopeWord(s); ok {
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

func (n *scopeNode) print(p *printer) { p.WriteString(n.word) }

func (n *selectNode) print(p *printer) {
	n.x.print(p)
	p.WriteByte('.')
	p.name(n.name)
}

func (n *indexNode) print(p *printer) {
	n.x.print(p)
	p.WriteByte('[')
	n.i.print(p)
	p.WriteByte(']')
}

func (n *unaryNode) print(p *printer) {
	p.WriteString(opText[n.op])
	n.x.print(p)
}

func (n *binaryNode) print(p *printer) {
	n.l.print(p)
	p.WriteByte(' ')
	p.WriteString(opText[n.op])
	p.WriteByte(' ')
	n.r.print(p)
}

func (n *condNode) print(p *printer) {
	n.c.print(p)
	p.WriteString(" ? ")
	n.a.print(p)
	p.WriteString(" : ")
	n.b.print(p)
}

func (n *elvisNode) print(p *printer) {
	n.a.print(p)
	p.WriteString(" ?: ")
	n.b.print(p)
}

func (n *parenNode) print(p *printer) {
	p.WriteByte('(')
	n.x.print(p)
	p.WriteByte(')')
}

func (n *listNode) print(p *printer) {
	p.WriteString("{ ")
	for i, e := range n.elems {
		if i > 0 {
			p.WriteByte(',')
		}
		e.print(p)
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
		a.print(p)
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
// newline-terminated.
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

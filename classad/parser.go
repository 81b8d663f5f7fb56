package classad

import (
	"math"
	"strings"
)

// MaxNesting bounds how deeply expressions, lists and ClassAds may nest in
// parsed input; deeper input is refused with a SyntaxError rather than
// risking the stack.
const MaxNesting = 256

// maxTreeDepth bounds the depth of an expression tree, which long operator
// chains (a || b || c ...) and selections (a.b.c ...) grow without nesting;
// evaluation and printing recurse that deep.
const maxTreeDepth = 1 << 14

type parser struct {
	lx    lexer
	tok   token
	depth int // nesting of parentheses, lists, ads and unary operators
	tree  int // depth of the tree being built
	// base is the offset of lx.src in the whole input, total the input's
	// length: old syntax is lexed a line at a time.
	base, total int
	// Nodes of the commonest kinds come from slabs: fewer allocations.
	lits  slab[litNode]
	attrs slab[attrNode]
	bins  slab[binaryNode]
	crs   slab[constRNode]
	sels  slab[selectNode]
	scps  slab[scopeNode]
}

// slab hands out pointers into chunks of Ts. The nodes of a parsed ad
// live as long as the ad, and so does whatever a chunk leaves unused; so
// each chunk is sized by how many nodes of its kind the input read so far
// holds, scaled to the input left (see parser.chunk), rather than doubled.
type slab[T any] struct {
	free []T
	n    int // handed out so far
}

// take returns a fresh node from s, adding a chunk sized by p if s is used
// up.
func take[T any](p *parser, s *slab[T]) *T {
	if len(s.free) == 0 {
		s.free = make([]T, p.chunk(s.n))
	}
	s.n++
	x := &s.free[0]
	s.free = s.free[1:]
	return x
}

// chunk returns the size of the next chunk for a slab that has handed out
// n nodes: those the rest of the input should need at the density seen so
// far, with an eighth to spare, between 2 and 256; the first chunk is 4.
func (p *parser) chunk(n int) int {
	done := p.base + p.lx.pos
	if n == 0 || done == 0 {
		return 4
	}
	rest := n * (p.total - done) / done
	return min(max(rest+rest/8+1, 2), 256)
}

func (p *parser) lit(v Value) node {
	n := take(p, &p.lits)
	n.v = v
	return n
}

func (p *parser) attr(name string, abs bool) node {
	n := take(p, &p.attrs)
	*n = attrNode{name: name, hash: hashName(name), abs: abs}
	return n
}

// init readies p to parse src; it is not a constructor so that the parser
// can live on the caller's stack.
func (p *parser) init(src string, old bool) {
	p.lx = lexer{src: src, old: old}
	p.total = len(src)
	if len(src) > math.MaxInt32 {
		p.lx.err = &SyntaxError{Line: 1, Column: 1, Msg: "input longer than 2 GiB"}
		return
	}
	p.advance()
}

func (p *parser) advance() { p.tok = p.lx.next() }

func (p *parser) failed() bool { return p.lx.err != nil }

func (p *parser) errorf(format string, args ...any) {
	p.lx.errorf(int(p.tok.pos), format, args...)
	p.tok = token{kind: tEOF, pos: p.tok.pos}
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) expect(s string, what string) {
	if !p.isPunct(s) {
		p.errorf("expected '%s' %s, found %s", s, what, p.tok.describe())
		return
	}
	p.advance()
}

func (p *parser) enter() bool {
	p.depth++
	p.tree++
	if p.depth > MaxNesting {
		p.errorf("nesting deeper than %d levels", MaxNesting)
		return false
	}
	return p.deeper(0)
}

func (p *parser) leave() {
	p.depth--
	p.tree--
}

// deeper adds n levels to the tree depth and reports whether it is within
// bounds.
func (p *parser) deeper(n int) bool {
	p.tree += n
	if p.tree > maxTreeDepth {
		p.errorf("expression deeper than %d levels", maxTreeDepth)
		return false
	}
	return true
}

// errNode stands in for input that failed to parse.
func errNode() node { return &litNode{v: Value{kind: ErrorKind}} }

// isConst reports whether n is a constant.
func isConst(n node) bool {
	switch n.(type) {
	case *litNode, *foldNode:
		return true
	}
	return false
}

// fold evaluates n, whose operands are constants, once at parse time.
func fold(n node) node {
	return &foldNode{v: n.eval(nil, nil), src: n}
}

// ParseExpr parses one expression in new-ClassAd syntax.
func ParseExpr(src string) (Expr, error) {
	var p parser
	p.init(src, false)
	n := p.expr()
	if !p.failed() && p.tok.kind != tEOF {
		p.errorf("expected operator or end of input, found %s", p.tok.describe())
	}
	if p.failed() {
		return Expr{}, p.lx.err
	}
	return Expr{n}, nil
}

// Parse parses a ClassAd in new syntax: "[ a = 1; b = a + 1 ]". As a
// leniency the semicolons between attributes may be left out, so ads printed
// one attribute per line (as in Condor papers) are read too.
func Parse(src string) (*ClassAd, error) {
	var p parser
	p.init(src, false)
	if !p.isPunct("[") {
		p.errorf("expected '[' to start a ClassAd, found %s", p.tok.describe())
		return nil, p.lx.err
	}
	// One attribute per line or per ';' is the usual shape; sizing the ad
	// for that up front saves regrowing it.
	ad := p.classad(min(max(strings.Count(src, "\n"), strings.Count(src, ";")), 1<<12))
	if !p.failed() && p.tok.kind != tEOF {
		p.errorf("expected end of input after ClassAd, found %s", p.tok.describe())
	}
	if p.failed() {
		return nil, p.lx.err
	}
	return ad, nil
}

// ParseOld parses a ClassAd in old syntax: one "Name = Expr" per line. Blank
// lines and lines starting with # are ignored. In strings a backslash escapes
// only a double quote.
func ParseOld(src string) (*ClassAd, error) {
	// One parser serves every line, so that nodes come from shared slabs,
	// and the ad is sized once: old syntax then costs what new syntax does.
	lines := strings.Count(src, "\n") + 1
	ad := New()
	ad.reserve(min(lines, 1<<12))
	var p parser
	p.total = len(src)
	lineNo, off := 0, 0
	for off < len(src) {
		lineNo++
		end := strings.IndexByte(src[off:], '\n')
		var line string
		if end < 0 {
			line, end = src[off:], len(src)
		} else {
			line, end = src[off:off+end], off+end+1
		}
		start := off
		off = end
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		p.lx = lexer{src: line, old: true}
		p.base = start
		p.advance()
		name, ok := p.attrName()
		if ok {
			p.expect("=", "after attribute name")
		}
		var n node
		if !p.failed() {
			n = p.expr()
			if !p.failed() && p.tok.kind != tEOF {
				p.errorf("expected end of line, found %s", p.tok.describe())
			}
		}
		if p.failed() {
			e := p.lx.err
			return nil, &SyntaxError{Offset: start + e.Offset, Line: lineNo, Column: e.Column, Msg: e.Msg}
		}
		if ad.Len() >= MaxAttributes {
			return nil, &SyntaxError{Offset: start, Line: lineNo, Column: 1, Msg: "more than 16777215 attributes"}
		}
		ad.Set(name, Expr{n})
	}
	return ad, nil
}

// attrName reads an attribute name: an identifier that is not a reserved
// word, or a 'quoted name'.
func (p *parser) attrName() (string, bool) {
	switch p.tok.kind {
	case tIdent:
		if isKeyword(p.tok.text) {
			p.errorf("expected attribute name, found reserved word %s", p.tok.describe())
			return "", false
		}
		name := p.tok.text
		p.advance()
		return name, true
	case tName:
		name := p.tok.text
		p.advance()
		return name, true
	}
	p.errorf("expected attribute name, found %s", p.tok.describe())
	return "", false
}

// isKeyword reports whether s is a literal or operator word.
func isKeyword(s string) bool {
	switch len(s) {
	case 2:
		return equalFold(s, "is")
	case 4:
		return equalFold(s, "true") || equalFold(s, "isnt")
	case 5:
		return equalFold(s, "false") || equalFold(s, "error")
	case 9:
		return equalFold(s, "undefined")
	}
	return false
}

// classad parses "[ name = expr; ... ]"; the current token is '['. The ad
// is sized for hint attributes.
func (p *parser) classad(hint int) *ClassAd {
	ad := New()
	ad.reserve(hint)
	if !p.enter() {
		return ad
	}
	defer p.leave()
	p.advance()
	for !p.failed() && !p.isPunct("]") {
		name, ok := p.attrName()
		if !ok {
			break
		}
		p.expect("=", "after attribute name")
		n := p.expr()
		if p.failed() {
			break
		}
		if ad.Len() >= MaxAttributes {
			p.errorf("more than %d attributes", MaxAttributes)
			break
		}
		ad.Set(name, Expr{n})
		switch {
		case p.isPunct(";"):
			p.advance()
		case p.isPunct("]"), p.tok.kind == tIdent, p.tok.kind == tName:
		default:
			p.errorf("expected ';' or ']' after attribute %s, found %s", name, p.tok.describe())
		}
	}
	p.expect("]", "to close ClassAd")
	return ad
}

// expr parses a conditional expression, the lowest precedence level.
func (p *parser) expr() node {
	if !p.enter() {
		return errNode()
	}
	defer p.leave()
	c := p.binary(1)
	if !p.isPunct("?") {
		return c
	}
	p.advance()
	a := p.expr()
	p.expect(":", "in conditional expression")
	if p.failed() {
		return errNode()
	}
	return &condNode{c: c, a: a, b: p.expr()}
}

// binop returns the binary operator at the current token and its
// precedence, from 1 (||) to 10 (* / %), or opNone.
func (p *parser) binop() (op, int) {
	t := p.tok
	switch t.kind {
	case tIdent:
		switch {
		case equalFold(t.text, "is"):
			return opIs, 6
		case equalFold(t.text, "isnt"):
			return opIsnt, 6
		}
	case tPunct:
		switch t.text {
		case "||":
			return opOr, 1
		case "&&":
			return opAnd, 2
		case "|":
			return opBitOr, 3
		case "^":
			return opBitXor, 4
		case "&":
			return opBitAnd, 5
		case "==":
			return opEq, 6
		case "!=":
			return opNe, 6
		case "=?=":
			return opMetaEq, 6
		case "=!=":
			return opMetaNe, 6
		case "<":
			return opLt, 7
		case "<=":
			return opLe, 7
		case ">":
			return opGt, 7
		case ">=":
			return opGe, 7
		case "<<":
			return opShl, 8
		case ">>":
			return opShr, 8
		case ">>>":
			return opUshr, 8
		case "+":
			return opAdd, 9
		case "-":
			return opSub, 9
		case "*":
			return opMul, 10
		case "/":
			return opDiv, 10
		case "%":
			return opMod, 10
		}
	}
	return opNone, 0
}

// binary parses operators of precedence minPrec and above, left
// associative, by precedence climbing.
func (p *parser) binary(minPrec int) node {
	l := p.unary()
	base := p.tree
	for !p.failed() {
		o, prec := p.binop()
		if o == opNone || prec < minPrec || !p.deeper(1) {
			break
		}
		p.advance()
		r := p.binary(prec + 1)
		b := take(p, &p.bins)
		*b = binaryNode{op: o, l: l, r: r}
		switch {
		case isConst(b.l) && isConst(r):
			l = fold(b)
		case isConst(r) && o != opAnd && o != opOr:
			cr := take(p, &p.crs)
			*cr = constRNode{op: o, l: b.l, k: r.eval(nil, nil), src: b}
			l = cr
		default:
			l = b
		}
	}
	p.tree = base
	return l
}

func (p *parser) unary() node {
	var o op
	if p.tok.kind == tPunct {
		switch p.tok.text {
		case "-":
			o = opNeg
		case "+":
			o = opPlus
		case "!":
			o = opNot
		case "~":
			o = opBitNot
		}
	}
	if o == opNone {
		return p.elvis(p.postfix(p.primary()))
	}
	if !p.enter() {
		return errNode()
	}
	defer p.leave()
	at := p.tok.pos
	p.advance()
	if o == opNeg && (p.tok.kind == tInt || p.tok.kind == tReal) && p.tok.pos == at+1 {
		// libclassad reads a minus sign written against a number as part
		// of the number: -1 is a literal and prints so, - 1 is a negation.
		// The most negative integer can only be written this way.
		t := p.tok
		p.advance()
		if t.kind == tInt {
			return p.elvis(p.postfix(p.lit(Int(decimalValue(t.text, true)))))
		}
		return p.elvis(p.postfix(p.lit(Real(-t.f()))))
	}
	x := p.unary()
	if isConst(x) {
		return fold(&unaryNode{op: o, x: x})
	}
	return &unaryNode{op: o, x: x}
}

// elvis parses x ?: y ?: ... after the postfix expression x. In
// libclassad ?: binds tighter than any other operator, and its right
// operand is a postfix expression too: 1 + a ?: 2 is 1 + (a ?: 2), and a
// unary operator there is a syntax error (a negative number is not).
func (p *parser) elvis(x node) node {
	for !p.failed() && p.isPunct("?:") {
		p.advance()
		var y node
		switch {
		case p.isPunct("-"):
			at := int(p.tok.pos)
			if rest := p.lx.src[at+1:]; rest != "" && (isDigit(rest[0]) || len(rest) > 1 && rest[0] == '.' && isDigit(rest[1])) {
				y = p.unary() // a negative number, which ends its own ?: chain
				return &elvisNode{a: x, b: y}
			}
			fallthrough
		case p.isPunct("+") || p.isPunct("!") || p.isPunct("~"):
			p.errorf("expected an operand after '?:', found %s", p.tok.describe())
			return errNode()
		default:
			y = p.postfix(p.primary())
		}
		x = &elvisNode{a: x, b: y}
	}
	return x
}

func (p *parser) number(t token) node {
	if t.kind == tInt {
		return p.lit(Int(t.i()))
	}
	return p.lit(Real(t.f()))
}

func (p *parser) postfix(x node) node {
	base := p.tree
	for !p.failed() && (p.isPunct(".") || p.isPunct("[")) && p.deeper(1) {
		switch {
		case p.isPunct("."):
			p.advance()
			name, ok := p.selectName()
			if !ok {
				return errNode()
			}
			sel := take(p, &p.sels)
			*sel = selectNode{x: x, name: name, hash: hashName(name)}
			x = sel
		case p.isPunct("["):
			if !p.enter() {
				return errNode()
			}
			p.advance()
			i := p.expr()
			p.expect("]", "to close subscript")
			p.leave()
			x = &indexNode{x: x, i: i}
		}
	}
	p.tree = base
	return x
}

// selectName reads the name after '.'; any identifier or quoted name will do.
func (p *parser) selectName() (string, bool) {
	if p.tok.kind == tIdent || p.tok.kind == tName {
		name := p.tok.text
		p.advance()
		return name, true
	}
	p.errorf("expected attribute name after '.', found %s", p.tok.describe())
	return "", false
}

var scopeWords = []struct {
	word string
	kind scopeKind
}{
	{"self", scopeSelf}, {"my", scopeSelf}, {"target", scopeTarget},
	{"other", scopeTarget}, {"parent", scopeParent}, {"root", scopeRoot},
}

func scopeWord(s string) (scopeKind, bool) {
	if len(s) < 2 || len(s) > 6 {
		return 0, false
	}
	for _, w := range scopeWords {
		if equalFold(s, w.word) {
			return w.kind, true
		}
	}
	return 0, false
}

func (p *parser) primary() node {
	t := p.tok
	switch t.kind {
	case tInt, tReal:
		p.advance()
		return p.number(t)
	case tString:
		p.advance()
		return p.lit(String(t.text))
	case tName:
		p.advance()
		if k, ok := scopeWord(t.text); ok {
			return p.scopeRef(k, t.text)
		}
		return p.attr(t.text, false)
	case tIdent:
		p.advance()
		switch {
		case !isKeyword(t.text):
		case equalFold(t.text, "true"):
			return p.lit(Bool(true))
		case equalFold(t.text, "false"):
			return p.lit(Bool(false))
		case equalFold(t.text, "undefined"):
			return p.lit(Undefined())
		case equalFold(t.text, "error"):
			return p.lit(Error())
		default: // is, isnt
			p.lx.errorf(int(t.pos), "expected expression, found '%s'", t.text)
			return errNode()
		}
		if p.isPunct("(") {
			return p.call(t.text)
		}
		if k, ok := scopeWord(t.text); ok {
			return p.scopeRef(k, t.text)
		}
		return p.attr(t.text, false)
	case tPunct:
		switch t.text {
		case ".":
			p.advance()
			name, ok := p.selectName()
			if !ok {
				return errNode()
			}
			return p.attr(name, true)
		case "(":
			if !p.enter() {
				return errNode()
			}
			defer p.leave()
			p.advance()
			x := p.expr()
			p.expect(")", "to close parenthesis")
			*x.parens()++ // at most MaxNesting, so it cannot overflow
			return x
		case "{":
			return p.list()
		case "[":
			return &adNode{ad: p.classad(0)}
		}
	}
	p.errorf("expected expression, found %s", t.describe())
	return errNode()
}

func (p *parser) scopeRef(k scopeKind, word string) node {
	n := take(p, &p.scps)
	*n = scopeNode{kind: k, word: word, hash: hashName(word)}
	return n
}

func (p *parser) list() node {
	if !p.enter() {
		return errNode()
	}
	defer p.leave()
	p.advance()
	l := &listNode{}
	for !p.failed() && !p.isPunct("}") {
		l.elems = append(l.elems, p.expr())
		if !p.isPunct(",") {
			break
		}
		p.advance()
	}
	p.expect("}", "to close list")
	for _, e := range l.elems {
		if !isConst(e) {
			return l
		}
	}
	return fold(l) // a constant list is built once, not at every evaluation
}

func (p *parser) call(name string) node {
	if !p.enter() {
		return errNode()
	}
	defer p.leave()
	p.advance() // (
	c := &callNode{name: name, fn: lookupBuiltin(name)}
	for !p.failed() && !p.isPunct(")") {
		c.args = append(c.args, p.expr())
		if !p.isPunct(",") {
			break
		}
		p.advance()
	}
	p.expect(")", "to close argument list of "+name)
	if len(c.args) == 1 && (equalFold(name, "absTime") || equalFold(name, "relTime")) {
		if l, ok := c.args[0].(*litNode); ok && l.v.kind == StringKind && *l.parens() == 0 {
			v, ok := timeLiteral(name, l.v.s())
			if !ok {
				p.errorf("%s(%q) is not a time", name, l.v.s())
				return errNode()
			}
			if v.kind == RealKind {
				// A relative time literal prints as one but, as in
				// libclassad, evaluates to its seconds as a real.
				return &foldNode{v: v, src: p.lit(RelTime(v.f()))}
			}
			return p.lit(v)
		}
	}
	precompile(c)
	return c
}

package classad

// Expr is a parsed, immutable expression. The zero Expr evaluates to
// undefined.
type Expr struct {
	n node
}

// node is one element of an expression tree. eval must not retain c.
type node interface {
	eval(c *evalCtx, s *adRef) Value
	print(p *printer)
	// parens points at the number of source parentheses around the node,
	// kept for printing so that evaluation never steps through them.
	parens() *uint16
}

// wrap records source parentheses; every node embeds it.
type wrap struct{ n uint16 }

func (w *wrap) parens() *uint16 { return &w.n }

// Literal returns an expression that evaluates to v.
func Literal(v Value) Expr { return Expr{&litNode{v: v}} }

// String unparses e in new-ClassAd syntax; ParseExpr reads it back as an
// equivalent expression.
func (e Expr) String() string {
	var p printer
	p.expr(e)
	return p.String()
}

// IsZero reports whether e is the zero Expr.
func (e Expr) IsZero() bool { return e.n == nil }

// AsLiteral returns the value of e if e is a literal.
func (e Expr) AsLiteral() (Value, bool) {
	if l, ok := e.n.(*litNode); ok {
		return l.v, true
	}
	return Value{}, false
}

type op uint8

const (
	opNone op = iota
	// binary, by rising precedence class
	opOr
	opAnd
	opBitOr
	opBitXor
	opBitAnd
	opEq
	opNe
	opMetaEq // =?=
	opMetaNe // =!=
	opIs
	opIsnt
	opLt
	opLe
	opGt
	opGe
	opShl
	opShr
	opUshr
	opAdd
	opSub
	opMul
	opDiv
	opMod
	// unary
	opNeg
	opPlus
	opNot
	opBitNot
)

var opText = [...]string{
	opOr: "||", opAnd: "&&", opBitOr: "|", opBitXor: "^", opBitAnd: "&",
	opEq: "==", opNe: "!=", opMetaEq: "is", opMetaNe: "isnt", opIs: "is", opIsnt: "isnt",
	opLt: "<", opLe: "<=", opGt: ">", opGe: ">=",
	opShl: "<<", opShr: ">>", opUshr: ">>>",
	opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opMod: "%",
	opNeg: "-", opPlus: "+", opNot: "!", opBitNot: "~",
}

// litNode is a constant.
type litNode struct {
	wrap
	v Value
}

// attrNode is a bare attribute name, or with abs set, a root reference ".name".
type attrNode struct {
	wrap
	name string
	hash uint32
	abs  bool
}

// scopeKind names the reserved scope words.
type scopeKind uint8

const (
	scopeSelf   scopeKind = iota // self, MY
	scopeTarget                  // TARGET, other
	scopeParent
	scopeRoot
)

// scopeNode is one of self, my, target, other, parent, root. As in
// libclassad, an attribute of that name in scope takes precedence.
type scopeNode struct {
	wrap
	kind scopeKind
	word string // spelling, for printing
	hash uint32
}

// selectNode is x.name.
type selectNode struct {
	wrap
	x    node
	name string
	hash uint32
}

// indexNode is x[i].
type indexNode struct {
	wrap
	x, i node
}

type unaryNode struct {
	wrap
	op op
	x  node
}

type binaryNode struct {
	wrap
	op   op
	l, r node
}

// constRNode is a binary operation (not && or ||) whose right operand is
// a constant, the shape of most comparisons in Requirements; src is the
// original node, for printing.
type constRNode struct {
	wrap
	op  op
	l   node
	k   Value
	src *binaryNode
}

// condNode is c ? a : b.
type condNode struct {
	wrap
	c, a, b node
}

// elvisNode is a ?: b.
type elvisNode struct {
	wrap
	a, b node
}

// foldNode is a constant folded at parse time; src is kept for printing.
type foldNode struct {
	wrap
	v   Value
	src node
}

type listNode struct {
	wrap
	elems []node
}

// adNode is a nested ClassAd literal.
type adNode struct {
	wrap
	ad *ClassAd
}

// callNode is a function call; fn is nil for unknown functions.
type callNode struct {
	wrap
	name string
	fn   builtin
	args []node
}

package classad

// Matcher evaluates Requirements and Rank between pairs of ads, reusing its
// evaluation state so that matching allocates nothing. A Matcher is not safe
// for concurrent use; give each goroutine its own.
type Matcher struct {
	c evalCtx
}

// NewMatcher returns a Matcher.
func NewMatcher() *Matcher { return &Matcher{} }

var (
	requirementsHash = hashName("Requirements")
	rankHash         = hashName("Rank")
)

// Match is the package-level Match without its pool round trip.
func (m *Matcher) Match(a, b *ClassAd) bool { return m.c.match(a, b) }

// Rank is the package-level Rank without its pool round trip.
func (m *Matcher) Rank(a, b *ClassAd) float64 { return m.c.rank(a, b) }

// EvalAttr evaluates a's attribute name with TARGET = b.
func (m *Matcher) EvalAttr(a, b *ClassAd, name string) Value {
	return m.c.evalAgainst(a, b, name, hashName(name))
}

// evalAgainst evaluates a's attribute name (with hash h) with TARGET = b.
func (c *evalCtx) evalAgainst(a, b *ClassAd, name string, h uint32) Value {
	i := a.find(name, h)
	if i < 0 {
		return Value{}
	}
	c.reset(a, b)
	v := c.result(c.evalAttr(a.root(), i))
	c.my, c.target = nil, nil
	return v
}

// match requires both Requirements to be true; as in libclassad a
// non-zero number counts as true.
func (c *evalCtx) match(a, b *ClassAd) bool {
	return holds(c.evalAgainst(a, b, "Requirements", requirementsHash)) &&
		holds(c.evalAgainst(b, a, "Requirements", requirementsHash))
}

func holds(v Value) bool {
	b, st := truth(v)
	return b && st == truthBool
}

func (c *evalCtx) rank(a, b *ClassAd) float64 {
	f, _ := toFloat(c.evalAgainst(a, b, "Rank", rankHash))
	return f
}

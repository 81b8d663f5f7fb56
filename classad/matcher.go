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

func (m *Matcher) evalAttr(a, b *ClassAd, name string, h uint32) Value {
	i := a.find(name, h)
	if i < 0 {
		return Value{}
	}
	m.c.reset(a, b)
	v := m.c.evalAttr(a.root(), i)
	m.c.my, m.c.target = nil, nil
	return v
}

// Match is the package-level Match without its pool round trip.
func (m *Matcher) Match(a, b *ClassAd) bool {
	return m.evalAttr(a, b, "Requirements", requirementsHash).IsTrue() &&
		m.evalAttr(b, a, "Requirements", requirementsHash).IsTrue()
}

// Rank is the package-level Rank without its pool round trip.
func (m *Matcher) Rank(a, b *ClassAd) float64 {
	f, _ := toFloat(m.evalAttr(a, b, "Rank", rankHash))
	return f
}

// EvalAttr evaluates a's attribute name with TARGET = b.
func (m *Matcher) EvalAttr(a, b *ClassAd, name string) Value {
	return m.evalAttr(a, b, name, hashName(name))
}

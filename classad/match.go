package classad

// Match reports whether a and b match: a's Requirements evaluated against b
// and b's Requirements evaluated against a are both exactly true.
func Match(a, b *ClassAd) bool {
	return a.EvalAttrAgainst("Requirements", b).IsTrue() &&
		b.EvalAttrAgainst("Requirements", a).IsTrue()
}

// Rank evaluates a's Rank with TARGET = b. Booleans count as 1 and 0, as in
// HTCondor; anything else that is not a number ranks 0.
func Rank(a, b *ClassAd) float64 {
	f, ok := toFloat(a.EvalAttrAgainst("Rank", b))
	if !ok {
		return 0
	}
	return f
}

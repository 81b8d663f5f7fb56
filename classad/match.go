package classad

// Match reports whether a and b match: a's Requirements evaluated against b
// and b's Requirements evaluated against a are both exactly true. It is safe
// for concurrent use.
func Match(a, b *ClassAd) bool {
	c := ctxPool.Get().(*evalCtx)
	ok := c.match(a, b)
	ctxPool.Put(c)
	return ok
}

// Rank evaluates a's Rank with TARGET = b. Booleans count as 1 and 0, as in
// HTCondor; anything else that is not a number ranks 0. It is safe for
// concurrent use.
func Rank(a, b *ClassAd) float64 {
	c := ctxPool.Get().(*evalCtx)
	r := c.rank(a, b)
	ctxPool.Put(c)
	return r
}

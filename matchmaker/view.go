package matchmaker

import "harrier.dev/harrier/classad"

// A read-only view of the pool for the matchmaker's status pages: the ads
// harrier status lists and the priorities harrier userprio shows.

// Query returns the live ads of type typ for which constraint is true,
// as [Collector.Query]. The ads are shared: the caller must not change
// them.
func (m *Matchmaker) Query(typ string, constraint classad.Expr) []*classad.ClassAd {
	return m.collector.Query(typ, constraint)
}

// Users returns the accountant's record of every user, best priority
// first; none if the matchmaker was given its priorities
// (Config.Priorities) rather than keeping them.
func (m *Matchmaker) Users() []UserPriority {
	if m.driver.accountant == nil {
		return nil
	}
	return m.driver.accountant.Users()
}

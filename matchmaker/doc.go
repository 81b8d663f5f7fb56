// Package matchmaker is Harrier's central manager: a collector that holds the
// pool's ClassAds under leases and answers constraint queries, and a
// negotiator that pairs idle jobs with machine slots and tells both sides.
//
// The package is split along the line drawn by Nomad's scheduler: the
// negotiation itself ([Negotiator.Negotiate]) is a pure function from ads to
// matches, with no locks, clocks or RPC inside; the [Collector] owns the
// mutable ad store; a cycle driver takes a snapshot from the collector,
// negotiates, applies the decisions back to the collector and hands the
// notifications to a [Notifier]. Tests replace the notifier and the clock.
//
// Matching follows HTCondor: a job and a machine match when each side's
// Requirements evaluates to true against the other; among the machines a job
// matches it gets the one its own Rank likes best, ties broken by the
// machine's Rank of the job and then by slot name so that a cycle is
// deterministic. Only machines whose State is "Unclaimed" are offered, and
// each machine at most once per cycle.
//
// A cycle runs when something changed that could make a new match (a machine
// that appeared or became Unclaimed, a job id the agent had not advertised
// before), debounced so that a burst of advertisements makes one cycle, and
// also periodically (NEGOTIATOR_INTERVAL) to pick up everything else.
//
// Fair share, autoclusters, indexing, preemption and flocking are not here
// yet; their seams are the [Prioritizer] that orders submitters and the
// per-group matching loop in the negotiator.
package matchmaker

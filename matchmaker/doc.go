// Package matchmaker is Harrier's central manager: a collector that holds the
// pool's ClassAds under leases and answers constraint queries, and a
// negotiator that pairs idle jobs with machine slots and tells both sides.
//
// The package is split along the line drawn by Nomad's scheduler: the
// negotiation itself ([Negotiator.Negotiate]) is a pure function from ads to
// matches, with no locks or RPC inside; the [Collector] owns the mutable ad
// store; a cycle driver takes a snapshot from the collector, charges usage
// to the [Accountant], negotiates, applies the decisions back to the
// collector and hands the notifications to a [Notifier]. Tests replace the
// notifier and the clock.
//
// Matching follows HTCondor: a job and a machine match when each side's
// Requirements evaluates to true against the other; among the machines a job
// matches it gets the one its own Rank likes best, ties broken by the
// machine's Rank of the job. Only Unclaimed machines are offered freely,
// each at most once per cycle.
//
// The negotiator scales by the techniques of Tannenbaum's "A New
// Architecture for Matchmaking in Condor" and Raman's thesis:
//
//   - Resource requests. Agents group their idle jobs into autoclusters
//     (jobs equal in every attribute a match can read: the significant
//     attributes this package publishes in its Negotiator ad) and advertise
//     one [Request] per autocluster with the list of its jobs. A plain job
//     ad is a request for one job.
//   - Matchlists. Each distinct request ad gets one matchlist per cycle:
//     the machines it matches, best first. Its jobs take machines from the
//     front. The matchlists of each submitter's first request are computed
//     in parallel before allocation, the others only when allocation
//     reaches their request, in parallel batches of the requests that
//     follow it. Requests equal in every attribute a match reads share
//     one matchlist, whichever agent or submitter they come from.
//   - Machine classes. Free machines that no request can tell apart (same
//     policy text, same values of everything requests and their own policy
//     read) form a class; matchlists hold classes, not machines. Conjuncts
//     of a machine's Requirements that read only the machine itself
//     (LoadAvg <= 0.3) are evaluated once per machine.
//   - Indexing. Conjuncts of a request's Requirements of the form
//     TARGET.Attr op constant are windows on a one-dimensional index of the
//     classes by Attr; only classes inside every window are evaluated.
//
// Requests negotiate in fair-share order: submitters by effective
// priority from the [Accountant] (priorities decay toward current usage
// with PRIORITY_HALFLIFE and are multiplied by priority factors), each up
// to its pie slice of the free machines, round after round. A request left
// wanting may then preempt a Claimed machine whose Rank prefers it over the
// job it runs (CurrentRank), or run by a user of worse priority where
// PREEMPTION_REQUIREMENTS holds. Preemption is a match marked as
// preempting (PreemptReason) sent to the startd, which carries it out as
// HTCondor's does: it holds the slot for the new claim, vacates the running
// job (checkpointed where it can be) back to its agent's queue, and gives
// the freed slot to the new claim alone; the preempting agent's claim
// request waits meanwhile. A slot being vacated is neither Unclaimed nor
// Claimed, so it is not offered again; once the new job runs, CurrentRank
// and the new RemoteOwner keep the vacated job from preempting it back
// unless RANK or PREEMPTION_REQUIREMENTS favour it. The accountant charges
// each slot to the RemoteOwner of its claim, a dynamic slot by its CPUs.
//
// Partitionable slots (PartitionableSlot = true) are not put in classes:
// each match changes what one has left. A request that has exhausted its
// matchlist of static slots goes on to the partitionable slots, in name
// order, first fit, as HTCondor's consumption policies do: the negotiator
// subtracts the job's RequestCpus, RequestMemory and RequestDisk from its
// own copy of the slot's ad and goes on matching it, so that one slot
// takes many jobs in a cycle. A partitionable slot counts its CPUs in the
// fair share (a static slot counts one), and a match of one counts the
// CPUs it takes. Request Rank does not order partitionable slots. The
// collector keeps a matched partitionable slot Unclaimed with what the
// match left until its startd, which carves a dynamic slot for the match
// (package startd), advertises the leftover itself.
//
// A cycle runs when something changed that could make a new match (a machine
// that appeared or became Unclaimed, a job id the agent had not advertised
// before), debounced so that a burst of advertisements makes one cycle, and
// also periodically (NEGOTIATOR_INTERVAL) to pick up everything else. Each
// cycle publishes its statistics, by phase, in the Negotiator ad, and the
// user priorities as Accounting ads.
//
// Advance reservations (package reservation) are kept and decided here:
// the Reservations service grants them by the administrator's policy, and
// each cycle narrows requests and machines to what the reservations allow
// and vacates what a window keeps off a slot (reservations.go).
//
// Gangmatching, matching a request with several ads at once through their
// Ports, is the subpackage gang. Each cycle, before the ordinary requests,
// [Negotiator.MarshalGangs] matches the requests whose ads have Ports with
// gangs of Unclaimed machines and license seats (licenses.go: License ads
// from LICENSE_FILE, whose seats in use are counted from the claims the
// machine ads show), submitters taking turns in priority order; the
// ordinary requests are then negotiated over the machines left, along the
// path above. The driver tells every startd of a gang and then the agent,
// once, with every member's claim id (gang_notify.go); the agent claims
// them all or none (agent/gang.go). docs/gangs.md is the user's guide.
package matchmaker

// Package startd is Harrier's execute-side daemon. It describes its machine
// to the matchmaker as one ClassAd per slot, lets an agent claim a slot the
// negotiator matched, runs the jobs it is asked to run under a claim in a
// starter process that it keeps for the claim's next job, and leaves the
// machine's owner in control: jobs run only while the owner's policy
// allows it.
//
// Each slot moves through the HTCondor states and activities administrators
// know:
//
//	Owner/Idle         → Unclaimed/Idle      IS_OWNER is no longer true
//	Unclaimed/Idle     → Owner/Idle          IS_OWNER is true
//	Unclaimed/Idle     → Matched/Idle        the negotiator matched it
//	Claimed/Idle       → Matched/Idle        a preempting match (the idle claim is dropped)
//	Matched/Idle       → Claimed/Idle        RequestClaim, if the match still holds
//	Matched/Idle       → Owner/Idle          IS_OWNER is true (the owner came back)
//	Matched/Idle       → Unclaimed/Idle      no claim in time; a refused claim
//	Claimed/Idle       → Claimed/Busy        ActivateClaim, if START is true for the job
//	Claimed/Idle       → Unclaimed/Idle      ReleaseClaim, lease expired, PREEMPT, START false, idle too long
//	Claimed/Busy       → Claimed/Idle        the job ended
//	Claimed/Busy       → Claimed/Suspended   WANT_SUSPEND and SUSPEND
//	Claimed/Suspended  → Claimed/Busy        CONTINUE
//	Claimed/Busy or Suspended
//	                   → Preempting/Vacating PREEMPT, lease expired, or a preempting match
//	                                         (Killing if WANT_VACATE is false)
//	                   → Preempting/Killing  ReleaseClaim
//	Preempting/Vacating → Preempting/Killing KILL, or MaxVacateTime has passed
//	Preempting/*       → Matched/Idle        the starter is gone and a preempting match waits
//	Preempting/*       → Unclaimed/Idle      the starter is gone (then Owner if IS_OWNER)
//
// The states are types (see state.go) so that an illegal move is an error
// naming both ends rather than a silently wrong ad. The policy (START,
// RANK, SUSPEND, CONTINUE, PREEMPT, KILL, WANT_SUSPEND, WANT_VACATE,
// IS_OWNER, MACHINE_MAX_VACATE_TIME) is a set of ClassAd expressions
// evaluated every PollingInterval with MY = the slot's machine ad and
// TARGET = the job's ad. Deciding is a pure function from a slot's
// situation to a step (policy.go); carrying the step out — telling the
// starter to suspend, continue, vacate or kill the job (starter.Command on
// its standard input; SIGKILL to its process group if it lingers) and
// moving the slot — is apart from it (poll.go). Policy text that does not parse is refused at
// start-up with its configuration key and the line and column; a value that
// evaluates to undefined or an error never starts, suspends, preempts or
// kills anything (see the defaults in policy.go for each expression).
//
// The machine is measured for the policy: KeyboardIdle and ConsoleIdle
// from the access times of terminals and console devices and from keyboard
// and mouse interrupt counts (idle.go); LoadAvg, CondorLoadAvg (the CPU use
// of the starters' process trees, read from /proc so that it works with or
// without containers) and TotalLoadAvg (load.go); memory, disk and CPUs;
// and the timers EnteredCurrentState and EnteredCurrentActivity.
//
// A claim is accepted only if the match still holds when the agent asks
// for it: the startd measures the machine again and evaluates both sides'
// Requirements, because the owner may have come back since the negotiator
// looked. Every job activated under a claim is checked against START
// again, because agents reuse claims for other jobs. A claim lives as long
// as its agent renews it with KeepAlive within ClaimLease; a silent
// agent's claim is released and its job vacated.
//
// Preemption is the negotiator's decision and the startd's to carry out,
// as in HTCondor. A match for a Claimed slot comes marked as preempting
// (the machine's RANK prefers the new job to the one it has, published as
// CurrentRank, or the new job's user has the better priority and
// PREEMPTION_REQUIREMENTS allows it). The startd takes its claim id as
// the slot's pending claim and vacates the running job at once (there is
// no retirement time, as with HTCondor's default MaxJobRetirementTime of
// 0): the job is checkpointed where it can be and goes back to its
// agent's queue as evicted. Until it is gone the preempting agent's
// RequestClaim is answered pending; then the slot is Matched under the
// pending claim, so that no other job can take it, and the old claim is
// gone with its job. A pending claim that its agent does not request
// within the match timeout expires, and the slot is Unclaimed again.
//
// The machine is laid out in slots by HTCondor's configuration: NumSlots
// even static slots, or SlotTypes (SLOT_TYPE_<n>, NUM_SLOTS_TYPE_<n>), each
// a share of the machine's CPUs, memory and disk, static or partitionable
// (resources.go holds the quantities; NumCPUs and MemoryMiB may replace
// the measured ones). A partitionable slot is never claimed itself: it is
// always Unclaimed (or Owner) and advertises what it has left (Cpus,
// Memory, Disk) beside its totals (TotalSlotCpus...). A match with it
// carves a dynamic slot of the job's RequestCpus, RequestMemory and
// RequestDisk (slot1_1, slot1_2...), which takes the match and goes
// through the states above as a static slot does; the leftover is
// advertised at once, and when the dynamic slot would become Unclaimed
// it goes instead, its ad withdrawn and its resources back in the
// partitionable slot. The agent claims the partitionable slot by the name
// it was matched with and gets the dynamic slot's ad, which its claim
// reuse then matches its further jobs against. A job's container is
// limited by its requests (CPU shares, memory), so by its dynamic slot;
// with AssignCPUAffinity a claimed slot also takes cores of its own for
// its jobs' cpuset.
//
// A drain (Drain) is the administrator's, or the defrag daemon's: START
// is false until it is cancelled, and each running job leaves as the
// drain's Schedule says. By default one that can be checkpointed here is
// vacated at once, to continue elsewhere, and the others retire: they run
// on (advertised Claimed/Retiring) until the last of their retirement
// times (MAXJOBRETIREMENTTIME, or the job's MaxJobRetirementTime if
// shorter) has passed, and are then vacated by the policy evaluation. A
// slot the drain keeps empty is advertised Drained.
//
// The machine ad is rebuilt from a fresh measurement each time it is sent:
// at start-up, every AdvertiseInterval, and at once after any state change.
package startd

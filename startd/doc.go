// Package startd is Harrier's execute-side daemon. It describes its machine
// to the matchmaker as one ClassAd per slot, lets an agent claim a slot the
// negotiator matched, and starts one starter process per job it is asked to
// run.
//
// Each slot moves through the HTCondor states administrators know:
//
//	Unclaimed/Idle ──Matched──▶ Matched/Idle ──RequestClaim──▶ Claimed/Idle
//	      ▲                         │ (timeout, refused claim)    │  ▲
//	      └─────────────────────────┘              ActivateClaim  │  │ starter exits
//	      ▲                                                       ▼  │
//	      ├──────────── ReleaseClaim (no job) ─────────────── Claimed/Busy
//	      │                                                       │ ReleaseClaim
//	      └────────────── starter gone ─────────────── Preempting/Killing
//
// The states are types (see state.go) so that an illegal move is an error
// naming both ends rather than a silently wrong ad. A claim is accepted only
// if the match still holds when the agent asks for it: the startd measures
// the machine again and evaluates both sides' Requirements, because the
// owner's START expression may have become false since the negotiator
// looked.
//
// The machine ad is rebuilt from a fresh measurement each time it is sent:
// at start-up, every AdvertiseInterval, and at once after any state change.
// Owner policy beyond START (SUSPEND, PREEMPT, ...) and claim leases are not
// implemented yet; the state types leave room for the Owner state and the
// Suspended and Vacating activities.
package startd

// Package reservation is Harrier's advance reservation manager after PluS
// (Nakada et al., "Policy-based Control of Advance Reservation"): a user
// asks for N machines from a start time to an end time, the pool
// administrator's ClassAd policy decides machine by machine whether to
// grant them, and the granted reservation is kept durably in a [Book]
// until its window has passed.
//
// # The policy
//
// The policy is a ClassAd file (RESERVATION_POLICY_FILE), read at each
// request as PluS reads it, written as the paper's Figures 4, 5, 7 and 8
// are: attribute definitions with or without the enclosing brackets. Its
// attribute PLUS_NODE_RESERVABLE says whether one candidate machine may be
// given to the request. It is evaluated in an environment that binds
//
//	PLUS_RSV_OWNER        string          the user the reservation is for
//	PLUS_RSV_START        absolute time   the window's start
//	PLUS_RSV_END          absolute time   the window's end
//	PLUS_ALL_NODES        list of nodes   every machine of the pool
//	PLUS_CANDIDATE_NODE   node            the machine being judged
//	PLUS_ALLOCATED_NODES  list of nodes   the machines granted to this request so far
//
// and adds the paper's functions: plus_rsvutil(user, from, to) is the list
// {count, total time, node-hours} of the user's reservations overlapping
// [from, to], each counted for its part inside it; evaluateList(list,
// "var", "attr") evaluates attr with var bound to each element in turn;
// linear(x, x1, y1, x2, y2) interpolates (and extrapolates) the line
// through (x1, y1) and (x2, y2); reverseSort(list) sorts numbers, times or
// strings largest first. These are seen by the policy only: the ClassAd
// language of jobs and machines is unchanged.
//
// A node record is made from a machine (slot) ad as the paper's Table 2
// and Table 3 describe, see [NodeOf]. The candidates are the machines no
// reservation holds in an overlapping window, in name order; each is
// bound as PLUS_CANDIDATE_NODE in turn until the request has its N
// machines (accepted) or none is left (refused). The request is granted
// whole or not at all. A policy may define RefusalReason, a string
// evaluated for the last refused candidate, to tell the user why. Without
// a policy every free machine is reservable.
//
// # Two-phase commit
//
// [Book.Prepare] decides a request and holds the machines it chose (a
// hold counts as a reservation for every later decision); [Book.Commit]
// writes the reservation durably and only then makes it visible;
// [Book.Abort] gives the machines back, and a hold not committed within
// HoldTimeout lapses. Decisions are taken one at a time, so two requests
// for overlapping windows never get the same machine.
//
// # Enforcement
//
// The matchmaker applies the book to each negotiation ([Confine],
// [NarrowMachine]) and vacates what must not run ([Evictions]): a job
// submitted with ReservationId runs only on its reservation's machines,
// only inside its window, and only for the reservation's owner; an
// ordinary job runs on a reserved machine only before the window (and is
// not started there if its EstimatedRunTime says it would not finish
// before the window starts); at the window's start ordinary jobs there are
// vacated, at its end the reservation's jobs.
package reservation

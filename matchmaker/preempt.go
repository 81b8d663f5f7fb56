package matchmaker

import (
	"cmp"
	"strings"

	"harrier.dev/harrier/classad"
)

// StateClaimed is the state of a slot that runs, or is about to run, a job.
const StateClaimed = "Claimed"

// Attributes of the job ad in a preempting match notification to a
// startd: why the match preempts ("rank" or "priority") and the JobId of
// the job to vacate. The startd vacates that job and holds the slot for
// the match's claim; a startd that finds the match out of date (the slot
// changed hands, or its RANK no longer prefers the job) refuses it, and the
// job waits for the next cycle.
const (
	AttrPreemptReason = "PreemptReason"
	AttrPreemptsJob   = "PreemptsJob"
)

// preempt lets requests that still want machines displace running jobs,
// in the same submitter order as allocation, each claimed machine at most
// once a cycle. Preemption in Harrier always means vacate: the match goes
// to the startd, which evicts the job back to its agent's queue (with a
// checkpoint where there is one) and keeps the slot for this match.
func (a *allocator) preempt(reqs []Request, want []int, claimed []Machine, n Negotiator) {
	if a.taken == nil {
		a.taken = map[string]bool{}
	}
	m := classad.NewMatcher()
	for _, q := range submitterQueues(reqs, n.Priorities) {
		for _, i := range q.reqs {
			r := &reqs[i]
			for want[i] > 0 {
				// The preempted job's uses are not counted back: a
				// request at its limit preempts nothing.
				uses, fits := a.fitsLimits(reqs, i)
				if !fits {
					break
				}
				best, why := -1, ""
				var bestJR, bestMR float64
				for k, mach := range claimed {
					if a.taken[mach.Name] || !m.Match(r.Ad, mach.Ad) {
						continue
					}
					reason := n.preemptReason(m, r, mach)
					if reason == "" {
						continue
					}
					jr, mr := m.Rank(r.Ad, mach.Ad), m.Rank(mach.Ad, r.Ad)
					if best < 0 || better(jr, mr, mach.Name, bestJR, bestMR, claimed[best].Name) {
						best, why, bestJR, bestMR = k, reason, jr, mr
					}
				}
				if best < 0 {
					break
				}
				mach := claimed[best]
				a.taken[mach.Name] = true
				owner, _ := mach.Ad.EvalString("RemoteOwner")
				jobID, _ := mach.Ad.EvalString("JobId")
				job := len(r.JobIDs) - want[i]
				a.matches = append(a.matches, Match{
					Job:      Job{ID: r.JobIDs[job], Agent: r.Agent, AgentAddr: r.AgentAddr, Ad: r.Ad},
					Request:  r.ID,
					Machine:  mach,
					Preempts: &Preemption{Reason: why, RemoteOwner: owner, JobID: jobID},
				})
				want[i]--
				a.limits.add(uses)
			}
		}
	}
}

// preemptReason says why r may preempt the claimed machine mach: "rank"
// when the machine publishes CurrentRank, the rank it gives its current
// job, and ranks r higher; "priority" when mach runs another submitter's
// job, PreemptionRequirements holds and the machine does not rank its
// current job above r. Otherwise it returns "".
func (n Negotiator) preemptReason(m *classad.Matcher, r *Request, mach Machine) string {
	newRank := m.Rank(mach.Ad, r.Ad)
	current, hasRank := mach.Ad.EvalReal("CurrentRank")
	if hasRank && newRank > current {
		return "rank"
	}
	if n.PreemptionRequirements.IsZero() || n.Priorities == nil || (hasRank && newRank < current) {
		return ""
	}
	owner := chargedTo(mach.Ad, "RemoteOwner")
	user := submitter(r)
	if owner == "" || strings.EqualFold(owner, user) {
		return ""
	}
	ad := mach.Ad.Copy()
	ad.SetReal("RemoteUserPrio", n.Priorities.Priority(owner))
	ad.SetReal("SubmitterUserPrio", n.Priorities.Priority(user))
	if ad.EvalExpr(n.PreemptionRequirements, r.Ad).IsTrue() {
		return "priority"
	}
	return ""
}

// better reports whether a machine with job rank jr, machine rank mr and
// name beats the best so far.
func better(jr, mr float64, name string, bjr, bmr float64, bname string) bool {
	if c := cmp.Compare(jr, bjr); c != 0 {
		return c > 0
	}
	if c := cmp.Compare(mr, bmr); c != 0 {
		return c > 0
	}
	return strings.Compare(name, bname) < 0
}

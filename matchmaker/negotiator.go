package matchmaker

import (
	"cmp"
	"strings"

	"harrier.dev/harrier/classad"
)

// A Job is one idle job ad and the agent that advertised it.
type Job struct {
	ID        string // "ClusterId.ProcId"
	Agent     string // the agent's name
	AgentAddr string // where the agent hears of matches
	Ad        *classad.ClassAd
}

// A Machine is one machine (slot) ad.
type Machine struct {
	Name string // the slot's name, "slot1@host"
	Ad   *classad.ClassAd
}

// A Match pairs a job with the machine slot it is to run on.
type Match struct {
	Job     Job
	Machine Machine
}

// A Result is the outcome of one negotiation.
type Result struct {
	Matches []Match
	// Rejections counts the jobs that got no machine.
	Rejections int
	// IdleJobs counts the jobs considered.
	IdleJobs int
	// CandidateSlots counts the machines that were Unclaimed.
	CandidateSlots int
}

// A Prioritizer gives each submitter a priority value; submitters with a
// smaller value negotiate first, as with HTCondor's user priorities.
// Submitters with equal values negotiate as one group whose jobs are
// interleaved by job order.
type Prioritizer interface {
	Priority(submitter string) float64
}

// A Negotiator decides matches. It is a pure function of its input: it
// reads ads, never changes them, and keeps no state between cycles.
type Negotiator struct {
	// Priorities orders submitters; nil treats all submitters alike, so
	// that jobs negotiate purely in job order.
	Priorities Prioritizer
}

// Negotiate pairs jobs with machines. Only machines whose State is
// "Unclaimed" are candidates, and each is matched at most once. Jobs are
// served submitter group by submitter group (see [Prioritizer]) and, within
// a group, by JobPrio (higher first), then QDate, ClusterId and ProcId
// (earlier first). Each job gets, among the remaining candidates it matches
// (classad.Match: both Requirements true), the one with the highest job
// Rank of the machine, ties broken by the machine's Rank of the job (higher
// first) and then by slot name.
func (n Negotiator) Negotiate(jobs []Job, machines []Machine) Result {
	var free []Machine
	for _, m := range machines {
		if state(m.Ad) == StateUnclaimed {
			free = append(free, m)
		}
	}
	res := Result{IdleJobs: len(jobs), CandidateSlots: len(free)}
	for _, group := range groupBySubmitter(jobs, n.Priorities) {
		for _, j := range group {
			i := bestMachine(j, free)
			if i < 0 {
				res.Rejections++
				continue
			}
			res.Matches = append(res.Matches, Match{Job: j, Machine: free[i]})
			free = append(free[:i], free[i+1:]...)
		}
	}
	return res
}

// bestMachine returns the index in free of the machine j should get, or -1
// if it matches none.
func bestMachine(j Job, free []Machine) int {
	best := -1
	var bestJobRank, bestMachineRank float64
	for i, m := range free {
		if !classad.Match(j.Ad, m.Ad) {
			continue
		}
		jr, mr := classad.Rank(j.Ad, m.Ad), classad.Rank(m.Ad, j.Ad)
		if best < 0 || better(jr, mr, m.Name, bestJobRank, bestMachineRank, free[best].Name) {
			best, bestJobRank, bestMachineRank = i, jr, mr
		}
	}
	return best
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

package matchmaker

import (
	"slices"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker/gang"
)

// A GangMatch pairs a job whose ad has Ports with its gang: a machine or
// license seat docked at each port.
type GangMatch struct {
	Job     Job
	Request string
	// Machines are the gang's machines in the order their ports were
	// filled. The job runs on the first; the others are held for it.
	Machines []GangMachine
	// Licenses name the licenses the gang holds a seat of.
	Licenses []string
}

// GangMachine is one machine of a gang.
type GangMachine struct {
	Machine
	// Label is the label of the port the machine docked at, Port that
	// port's own attributes (nil if it is a port of another member of the
	// gang rather than of the job).
	Label string
	Port  *classad.ClassAd
}

// Gangs is the outcome of [Negotiator.MarshalGangs].
type Gangs struct {
	Matches []GangMatch
	// Requests are the requests without Ports and Machines the machines
	// no gang took: what [Negotiator.Negotiate] then negotiates.
	Requests []Request
	Machines []Machine
	// GangRequests counts the requests with Ports, GangJobs their jobs.
	GangRequests, GangJobs int
	// Invalid counts the requests whose Ports are bad.
	Invalid int
	// Stats are the gangmatcher's probes and evaluations.
	Stats gang.Stats
}

// MarshalGangs matches the requests whose ads have Ports (see package
// gang) with gangs of the Unclaimed machines and the license seats given,
// each candidate in at most one gang, and returns them with the rest of
// the input for Negotiate. Submitters take turns in priority order, a
// gang each per turn, each taking its requests in job order; a request
// whose gang cannot form is done for the cycle. A gang must hold at least
// one machine: the job runs there.
//
// Requests without Ports pass through untouched: with none that has
// Ports the input is returned as it came.
func (n Negotiator) MarshalGangs(reqs []Request, machines []Machine, licenses []*classad.ClassAd) Gangs {
	var gangReqs []Request
	for i := range reqs {
		if _, ok := reqs[i].Ad.Lookup("Ports"); ok {
			gangReqs = append(gangReqs, reqs[i])
		}
	}
	out := Gangs{Requests: reqs, Machines: machines, GangRequests: len(gangReqs)}
	if len(gangReqs) == 0 {
		return out
	}
	out.Requests = slices.DeleteFunc(slices.Clone(reqs), func(r Request) bool {
		_, ok := r.Ad.Lookup("Ports")
		return ok
	})
	var cands []*classad.ClassAd
	var candMachine []int // the machine of each candidate, -1 for a license seat
	for i, m := range machines {
		if state(m.Ad) == StateUnclaimed {
			cands = append(cands, m.Ad)
			candMachine = append(candMachine, i)
		}
	}
	for _, l := range licenses {
		cands = append(cands, l)
		candMachine = append(candMachine, -1)
	}
	gm := gang.NewMatcher(cands, gang.Options{Algorithm: n.GangAlgorithm})
	taken := make([]bool, len(machines))
	queues := submitterQueues(gangReqs, n.Priorities)
	for r := range gangReqs {
		out.GangJobs += len(gangReqs[r].JobIDs)
	}
	for progress := true; progress; {
		progress = false
		for _, q := range queues {
			for q.at < len(q.reqs) {
				r := &gangReqs[q.reqs[q.at]]
				if q.served == len(r.JobIDs) {
					q.at, q.served = q.at+1, 0
					continue
				}
				g, err := gm.Marshal(r.Ad)
				if err != nil || g == nil || !slices.ContainsFunc(g.Members, func(mb gang.Member) bool { return candMachine[mb.Candidate] >= 0 }) {
					if err != nil && q.served == 0 {
						out.Invalid++
					}
					q.at, q.served = q.at+1, 0
					continue
				}
				gm.Consume(g)
				out.Matches = append(out.Matches, gangMatch(r, q.served, g, machines, candMachine, taken))
				q.served++
				progress = true
				break
			}
		}
	}
	out.Stats = gm.Stats()
	if len(out.Matches) > 0 {
		out.Machines = nil
		for i, m := range machines {
			if !taken[i] {
				out.Machines = append(out.Machines, m)
			}
		}
	}
	return out
}

// gangMatch describes gang g of job number job of request r, marking its
// machines taken.
func gangMatch(r *Request, job int, g *gang.Gang, machines []Machine, candMachine []int, taken []bool) GangMatch {
	ports, _ := gang.ParsePorts(r.Ad) // Marshal read them already
	gm := GangMatch{Job: Job{ID: r.JobIDs[job], Agent: r.Agent, AgentAddr: r.AgentAddr, Ad: r.Ad}, Request: r.ID}
	for _, mb := range g.Members {
		i := candMachine[mb.Candidate]
		if i < 0 {
			if isLicense(mb.Ad) {
				gm.Licenses = append(gm.Licenses, licenseName(mb.Ad))
			}
			continue
		}
		taken[i] = true
		m := GangMachine{Machine: machines[i], Label: mb.Label}
		if mb.Owner < 0 {
			m.Port = ports[mb.Port].Ad
		}
		gm.Machines = append(gm.Machines, m)
	}
	return gm
}

package main

import (
	"fmt"
	"io"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/matchmaker/gang"
)

// printGangAnalysis explains, port by port, why a job whose ad has Ports
// forms no gang: first from every machine and license of the pool,
// whatever they are doing, which shows a port nothing can fill; then, if
// a gang forms from those, from the machines and license seats free now.
func printGangAnalysis(w io.Writer, job *classad.ClassAd, machines, licenses []*classad.ClassAd) {
	id := jobIDOf(job)
	fmt.Fprintf(w, "Job %s is a gang: each of its Ports must dock with a machine or license, all at once.\n\n", id)
	all := append(append([]*classad.ClassAd{}, machines...), licenses...)
	x, err := gang.NewMatcher(all, gang.Options{}).Explain(job)
	if err != nil {
		fmt.Fprintf(w, "%s: %v\n\n", id, err)
		return
	}
	if !x.Formed {
		fmt.Fprintf(w, "%s: no gang forms from the pool's %d machines and %d licenses, whatever they are doing:\n\n", id, len(machines), len(licenses))
		printPorts(w, x, all)
		return
	}
	var free []*classad.ClassAd
	unclaimed := 0
	for _, m := range machines {
		if s, _ := m.EvalString("State"); s == matchmaker.StateUnclaimed {
			free = append(free, m)
			unclaimed++
		}
	}
	var seats []string
	for _, l := range licenses {
		total, ok := l.EvalInt(matchmaker.AttrSeats)
		if !ok {
			total = 1
		}
		used, _ := l.EvalInt(matchmaker.AttrSeatsInUse)
		for range max(total-used, 0) {
			free = append(free, l.Copy())
		}
		seats = append(seats, fmt.Sprintf("%s %d of %d", nameOf(l), max(total-used, 0), total))
	}
	fx, err := gang.NewMatcher(free, gang.Options{}).Explain(job)
	switch {
	case err != nil:
		fmt.Fprintf(w, "%s: %v\n\n", id, err)
	case fx.Formed:
		fmt.Fprintf(w, "%s: a gang forms from the machines and license seats free now; the job should start at the next negotiation cycle.\n\n", id)
	default:
		fmt.Fprintf(w, "%s: a gang forms from the pool's machines and licenses, but not from those free now\n", id)
		fmt.Fprintf(w, "(%d of %d machines Unclaimed; license seats free: %s). It waits for them:\n\n", unclaimed, len(machines), strings.Join(seats, ", "))
		printPorts(w, fx, free)
	}
}

// printPorts writes an explanation's ports, naming the candidates.
func printPorts(w io.Writer, x *gang.Explanation, cands []*classad.ClassAd) {
	for _, p := range x.Ports {
		fmt.Fprintf(w, "  Port %d (%s)", p.Port, p.Label)
		if p.Owner >= 0 {
			fmt.Fprintf(w, " of %s", nameOf(cands[x.Ports[p.Owner].Candidate]))
		}
		switch {
		case p.Candidate >= 0:
			fmt.Fprintf(w, ": docks with %s\n", nameOf(cands[p.Candidate]))
		case p.Stuck:
			fmt.Fprintf(w, ": nothing docks here\n")
		default:
			fmt.Fprintf(w, ": not reached\n")
		}
		fmt.Fprintf(w, "    of %d candidates, the port accepts %d, %d accept the port, %d both\n", p.Candidates, p.Admitted, p.Admitting, p.Compatible)
		if !p.Stuck {
			continue
		}
		for _, c := range p.Conjuncts {
			fmt.Fprintf(w, "    %6d  %s\n", c.Matches, c.Expr)
		}
		switch {
		case p.Conflict != "":
			fmt.Fprintf(w, "    Port %d (%s) is satisfied by no candidate: %s\n", p.Port, p.Label, p.Conflict)
		case p.Compatible > 0:
			fmt.Fprintf(w, "    candidates dock here, but with none of them can the rest of the gang form\n")
		case p.Admitted > 0:
			fmt.Fprintf(w, "    the candidates the port accepts refuse it by their own constraints\n")
		default:
			fmt.Fprintf(w, "    no candidate satisfies all the conditions at once\n")
		}
	}
	fmt.Fprintln(w)
}

// nameOf is an ad's Name, or its type if it has none.
func nameOf(ad *classad.ClassAd) string {
	if n, ok := ad.EvalString("Name"); ok {
		return n
	}
	t, _ := ad.EvalString("MyType")
	return t
}

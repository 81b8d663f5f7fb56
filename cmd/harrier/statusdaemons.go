package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// daemonAdTypes are the daemons' own ads, in the order status -daemons
// prints them.
var daemonAdTypes = []string{typeDaemonMaster, "Negotiator", "Scheduler"}

// statusDaemons prints the daemons' own ads from the collector: each
// host's master (its daemons and their restarts), the negotiator (its
// latest cycle) and each agent (its queue).
func statusDaemons(ctx context.Context, client wire.ScheddClient, o output, cons string, stdout io.Writer) error {
	p := o.printer(stdout, func(w io.Writer) table { return &daemonsTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)} })
	for _, typ := range daemonAdTypes {
		reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: typ, Constraint: cons})
		if err != nil {
			return rpcError("status", err)
		}
		for _, text := range reply.Ads {
			if err := p.add(text); err != nil {
				return err
			}
		}
	}
	return p.finish()
}

// daemonsTable prints one line per daemon ad.
type daemonsTable struct {
	tw     *tabwriter.Writer
	header bool
}

func (t *daemonsTable) row(ad *classad.ClassAd) {
	if !t.header {
		fmt.Fprintln(t.tw, "Name\tType\tStarted\tDetails")
		t.header = true
	}
	name, _ := ad.EvalString("Name")
	typ, _ := ad.EvalString("MyType")
	start, _ := ad.EvalInt("DaemonStartTime")
	var details string
	switch typ {
	case typeDaemonMaster:
		list, _ := ad.EvalString("DaemonList")
		restarts, _ := ad.EvalInt("Restarts")
		details = fmt.Sprintf("daemons %s; %d restarts", list, restarts)
	case "Negotiator":
		last, _ := ad.EvalInt("LastNegotiationCycleTime0")
		dur, _ := ad.EvalReal("LastNegotiationCycleDuration0")
		matches, _ := ad.EvalInt("LastNegotiationCycleMatches0")
		details = fmt.Sprintf("last cycle %s, %.3f s, %d matches", since(last), dur, matches)
	case "Scheduler":
		idle, _ := ad.EvalInt("TotalIdleJobs")
		running, _ := ad.EvalInt("TotalRunningJobs")
		held, _ := ad.EvalInt("TotalHeldJobs")
		details = fmt.Sprintf("%d idle, %d running, %d held", idle, running, held)
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\n", name, typ, since(start), details)
}

func (t *daemonsTable) flush() { t.tw.Flush() }

// daemonsQueryTimeout bounds status -daemons' three queries.
const daemonsQueryTimeout = time.Minute

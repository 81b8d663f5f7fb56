package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// daemonAdTypes are the daemons' own ads, in the order status -daemons
// prints them.
var daemonAdTypes = []string{typeDaemonMaster, "Negotiator", "Scheduler"}

// daemonAds returns the daemons' own ads from the collector that satisfy
// cons: each host's master (its daemons and their restarts), the
// negotiator (its latest cycle) and each agent (its queue).
func daemonAds(ctx context.Context, client wire.ScheddClient, cons string) ([]string, error) {
	var ads []string
	for _, typ := range daemonAdTypes {
		reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: typ, Constraint: cons})
		if err != nil {
			return nil, err
		}
		ads = append(ads, reply.Ads...)
	}
	return ads, nil
}

func newDaemonsTable(w io.Writer) table {
	return &daemonsTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
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

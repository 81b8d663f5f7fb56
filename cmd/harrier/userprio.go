package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/wire"
)

// runUserprio shows the user priorities the matchmaker's accountant
// publishes, best first, as condor_userprio does.
func runUserprio(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("userprio")
	var o output
	tf.fs.BoolVar(&o.json, "json", false, "print the accounting ads as JSON")
	tf.fs.BoolVar(&o.long, "long", false, "print the whole accounting ads")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: matchmaker.TypeAccounting})
	if err != nil {
		return rpcError("userprio", err)
	}
	p := o.printer(stdout, func(w io.Writer) table { return &userprioTable{w: w} })
	for _, text := range reply.Ads {
		if err := p.add(text); err != nil {
			return err
		}
	}
	return p.finish()
}

// userprioTable prints one line per user, best (smallest) priority first.
type userprioTable struct {
	w   io.Writer
	ads []*classad.ClassAd
}

func (t *userprioTable) row(ad *classad.ClassAd) { t.ads = append(t.ads, ad) }

func (t *userprioTable) flush() {
	w, ads := t.w, t.ads
	slices.SortStableFunc(ads, func(a, b *classad.ClassAd) int {
		pa, _ := a.EvalReal("Priority")
		pb, _ := b.EvalReal("Priority")
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "User Name\tEffective Priority\tReal Priority\tPriority Factor\tRes In Use\tTotal Usage (wall clock hours)")
	for _, ad := range ads {
		name, _ := ad.EvalString("Name")
		eff, _ := ad.EvalReal("Priority")
		real, _ := ad.EvalReal("RealPriority")
		factor, _ := ad.EvalReal("PriorityFactor")
		used, _ := ad.EvalInt("ResourcesUsed")
		usage, _ := ad.EvalReal("AccumulatedUsage")
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%d\t%.2f\n", name, eff, real, factor, used, usage/3600)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d users\n", len(ads))
}

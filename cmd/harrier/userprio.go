package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// runUserprio shows the user priorities the matchmaker's accountant
// publishes, best first, as condor_userprio does; the pool administrator
// may also set a user's priority factor (-setfactor USER F) or forget a
// user's usage (-resetusage USER), both kept across matchmaker restarts.
func runUserprio(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("userprio")
	var o output
	tf.fs.BoolVar(&o.json, "json", false, "print the accounting ads as JSON")
	tf.fs.BoolVar(&o.long, "long", false, "print the whole accounting ads")
	setFactor := tf.fs.Bool("setfactor", false, "set USER's priority factor to F (administrator)")
	resetUsage := tf.fs.Bool("resetusage", false, "forget USER's usage (administrator)")
	if err := tf.parse(args); err != nil {
		return err
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	if *setFactor || *resetUsage {
		return userprioAdmin(pc, *setFactor, tf.fs.Args(), stdout)
	}
	client, closeFn, err := agentClient(pc)
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

// userprioAdmin carries out -setfactor or -resetusage: it calls the
// matchmaker itself with the pool's admin certificate, which only the
// pool administrator can read.
func userprioAdmin(pc *poolConfig, set bool, rest []string, stdout io.Writer) error {
	switch {
	case set && len(rest) != 2:
		return usagef("-setfactor wants USER FACTOR")
	case !set && len(rest) != 1:
		return usagef("-resetusage wants USER")
	}
	client, closeFn, err := matchmakerAdminClient(pc)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if set {
		f, err := strconv.ParseFloat(rest[1], 64)
		if err != nil || f <= 0 {
			return usagef("priority factor %q: want a positive number", rest[1])
		}
		if _, err := client.SetPriorityFactor(ctx, &wire.SetPriorityFactorRequest{User: rest[0], Factor: f}); err != nil {
			return rpcError("userprio -setfactor", err)
		}
		fmt.Fprintf(stdout, "The priority factor of %s was set to %g.\n", rest[0], f)
		return nil
	}
	if _, err := client.ResetUsage(ctx, &wire.ResetUsageRequest{User: rest[0]}); err != nil {
		return rpcError("userprio -resetusage", err)
	}
	fmt.Fprintf(stdout, "The accumulated usage of %s was reset.\n", rest[0])
	return nil
}

// matchmakerAdminClient connects to the pool's matchmaker as its
// administrator.
func matchmakerAdminClient(pc *poolConfig) (wire.MatchmakerAdminClient, func(), error) {
	addr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return nil, nil, err
	}
	_, client, err := pc.tlsConfigs(string(pki.RoleAdmin))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, nil, fmt.Errorf("only the pool administrator may do this (%w)", err)
		}
		return nil, nil, err
	}
	conn, err := wire.Dial(addr, pki.ExpectRole(client, pki.RoleMatchmaker))
	if err != nil {
		return nil, nil, err
	}
	return wire.NewMatchmakerAdminClient(conn), func() { conn.Close() }, nil
}

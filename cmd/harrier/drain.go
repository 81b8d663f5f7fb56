package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"harrier.dev/harrier/wire"
)

// runDrain takes the machine HOST out of service, as condor_drain does,
// through HOST's master (its socket on this host, or over TLS): it takes
// no new jobs (START is false). By default its running jobs migrate: each
// one that can be checkpointed is vacated with a checkpoint to continue
// elsewhere, and the others retire (run on for their
// MaxJobRetirementTime) before they are vacated. -graceful lets every job
// retire first, as condor_drain's default does; -quick vacates every job
// at once; -fast kills them; -cancel puts the machine back in service.
// -reason says why, for the machine's ads (DrainReason), by default who
// drained it; -start is START while it drains; -check refuses the drain
// unless its expression is true on every slot; -resume-on-completion puts
// the machine back in service once its jobs are gone.
func runDrain(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("drain")
	graceful := tf.fs.Bool("graceful", false, "let every running job run out its retirement time, then vacate it")
	quick := tf.fs.Bool("quick", false, "vacate running jobs now")
	fast := tf.fs.Bool("fast", false, "kill running jobs now")
	cancel := tf.fs.Bool("cancel", false, "put the machine back in service")
	reason := tf.fs.String("reason", "", "why, for the machine's DrainReason (default: who drained it)")
	start := tf.fs.String("start", "", "START while the machine drains, a ClassAd expression (default: false)")
	check := tf.fs.String("check", "", "drain only if this ClassAd expression is true on every slot")
	resume := tf.fs.Bool("resume-on-completion", false, "put the machine back in service once its jobs are gone")
	tf.refuse("not yet: the startd stays; harrier off -peaceful stops it once its jobs are gone", "exit-on-completion", "restart-on-completion", "reconfig-on-completion")
	tf.refuse("not yet", "request-id=")
	if err := tf.parse(args); err != nil {
		return err
	}
	if len(tf.fs.Args()) != 1 {
		return usagef("want one HOST")
	}
	n := 0
	for _, b := range []bool{*graceful, *quick, *fast, *cancel} {
		if b {
			n++
		}
	}
	if n > 1 {
		return usagef("-graceful, -quick, -fast and -cancel exclude one another")
	}
	if *reason == "" {
		*reason = drainedBy()
	}
	host := tf.fs.Args()[0]
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	req := &wire.DrainRequest{Graceful: *graceful, Quick: *quick, Fast: *fast, Cancel: *cancel, Reason: *reason,
		Start: *start, Check: *check, ResumeOnCompletion: *resume}
	var reply *wire.DaemonDrainReply
	err = eachMaster(pc, host, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		reply, err = c.Drain(ctx, &wire.DaemonDrainRequest{Request: req})
		return err
	})
	if err != nil {
		return err
	}
	if *cancel {
		fmt.Fprintf(stdout, "%s: back in service.\n", host)
		return nil
	}
	fmt.Fprintf(stdout, "%s: draining (%s).\n", host, *reason)
	if len(reply.Vacated) > 0 {
		what := "vacated"
		switch {
		case *fast:
			what = "killed"
		case !*quick:
			what = "vacated to continue elsewhere"
		}
		fmt.Fprintf(stdout, "Jobs %s: %s.\n", what, strings.Join(reply.Vacated, ", "))
	}
	if len(reply.Retiring) > 0 {
		fmt.Fprintf(stdout, "Jobs retiring (running on for their MaxJobRetirementTime): %s.\n", strings.Join(reply.Retiring, ", "))
	}
	return nil
}

// drainedBy is a drain's reason when the administrator gives none, as
// condor_drain's: who drained the machine, from where.
func drainedBy() string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return "by " + who
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"harrier.dev/harrier/wire"
)

// runDrain takes the machine HOST out of service, as condor_drain does,
// through HOST's master (its socket on this host, or over TLS): it takes
// no new jobs (START is false); -graceful (the default) lets running jobs
// finish, -quick vacates them to run elsewhere; -cancel puts it back in
// service.
func runDrain(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("drain")
	tf.fs.Bool("graceful", false, "let running jobs finish (the default)")
	quick := tf.fs.Bool("quick", false, "vacate running jobs now")
	cancel := tf.fs.Bool("cancel", false, "put the machine back in service")
	if err := tf.parse(args); err != nil {
		return err
	}
	if len(tf.fs.Args()) != 1 {
		return usagef("want one HOST")
	}
	host := tf.fs.Args()[0]
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	var reply *wire.DaemonDrainReply
	err = eachMaster(pc, host, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		reply, err = c.Drain(ctx, &wire.DaemonDrainRequest{Request: &wire.DrainRequest{Quick: *quick, Cancel: *cancel}})
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case *cancel:
		fmt.Fprintf(stdout, "%s: back in service.\n", host)
	case len(reply.Vacated) > 0:
		fmt.Fprintf(stdout, "%s: draining; jobs vacated from %s.\n", host, strings.Join(reply.Vacated, ", "))
	default:
		fmt.Fprintf(stdout, "%s: draining; running jobs may finish.\n", host)
	}
	return nil
}

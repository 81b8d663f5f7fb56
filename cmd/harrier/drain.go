package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// runDrain takes the machine HOST (a startd of this host) out of service,
// as condor_drain does: it takes no new jobs (START is false); -graceful
// (the default) lets running jobs finish, -quick vacates them to run
// elsewhere; -cancel puts it back in service.
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
	conn, err := dialAdmin(daemonAdminSocket(runDirOf(pc), host), "startd "+host)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	reply, err := wire.NewDaemonAdminClient(conn).Drain(ctx, &wire.DrainRequest{Quick: *quick, Cancel: *cancel})
	if status.Code(err) == codes.PermissionDenied {
		return errNotAdministrator
	}
	if err != nil {
		return rpcError("drain", err)
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

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/wire"
)

// runWho lists the daemons of this host's masters (one per simulated
// host in a personal pool, or that of HOST): which run, since when, how
// often their master restarted them, and which the administrator turned
// off (stopping: turned off peacefully, still running jobs). Like the other administrator's commands it asks the masters on
// their root-only sockets.
func runWho(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("who")
	if err := tf.parse(args); err != nil {
		return err
	}
	if len(tf.fs.Args()) > 1 {
		return usagef("at most one HOST")
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Host\tDaemon\tPid\tStarted\tRestarts\tState")
	err = eachMaster(pc, first(tf.fs.Args()), func(ctx context.Context, host string, c wire.MasterAdminClient) error {
		reply, err := c.Daemons(ctx, &wire.DaemonsRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\tmaster\t%d\t%s\t-\trunning\n", host, reply.MasterPid, since(reply.MasterStartUnix))
		for _, d := range reply.Daemons {
			state := "running"
			switch {
			case d.Off && d.Pid != 0:
				state = "stopping" // peacefully: once its jobs have finished
			case d.Off:
				state = "off"
			case d.Pid == 0:
				state = "restarting"
			}
			pid := "-"
			if d.Pid != 0 {
				pid = fmt.Sprint(d.Pid)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", host, d.Name, pid, since(d.StartUnix), d.Restarts, state)
		}
		return nil
	})
	tw.Flush()
	return err
}

// since formats a start time in Unix seconds; 0 is never.
func since(unix int64) string {
	if unix == 0 {
		return "-"
	}
	return time.Unix(unix, 0).Format("2006-01-02 15:04:05")
}

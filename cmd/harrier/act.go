package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// actCommand returns rm, hold, release, vacate, checkpoint, suspend or
// continue. Like
// condor_rm, it acts on the jobs given by id, by owner name, by -constraint
// or -all (a user's -all is their own jobs, root's every job), reports
// each job, and fails if any job could not be acted on or none was found.
func actCommand(name string) func([]string, io.Reader, io.Writer) error {
	action := map[string]wire.ActRequest_Action{
		"rm": wire.ActRequest_REMOVE, "hold": wire.ActRequest_HOLD, "release": wire.ActRequest_RELEASE,
		"vacate": wire.ActRequest_VACATE, "checkpoint": wire.ActRequest_CHECKPOINT,
		"suspend": wire.ActRequest_SUSPEND, "continue": wire.ActRequest_CONTINUE,
	}[name]
	done := map[string]string{"rm": "marked for removal", "hold": "held", "release": "released",
		"vacate": "being vacated", "checkpoint": "being checkpointed", "suspend": "being suspended", "continue": "being continued"}[name]
	// The jobs each action applies to, by JobStatus.
	applicable := map[string]string{"rm": "JobStatus != 3", "hold": "JobStatus != 5 && JobStatus != 3 && JobStatus != 4",
		"release": "JobStatus == 5", "vacate": "(JobStatus == 2 || JobStatus == 7)", "checkpoint": "(JobStatus == 2 || JobStatus == 7)",
		"suspend": "JobStatus == 2", "continue": "JobStatus == 7"}[name]
	return func(args []string, _ io.Reader, stdout io.Writer) error {
		tf := newToolFlags(name)
		var reason string
		if name == "rm" || name == "hold" || name == "release" {
			tf.fs.StringVar(&reason, "reason", "", "why (recorded with the job)")
		}
		constraint := tf.fs.String("constraint", "", "act on the jobs for which this ClassAd expression is true")
		all := tf.fs.Bool("all", false, "act on all jobs you may act on")
		tf.refuse("refused: "+localAgent, "name=", "addr=")
		tf.refuse("not yet: each job is reported", "long", "totals")
		if name == "rm" {
			tf.refuse("not yet: a removed job leaves the queue once its shadow is gone", "forcex")
		}
		if name == "hold" {
			tf.refuse("not yet: a user's hold has HoldReasonSubCode 0", "subcode=")
		}
		client, closeFn, err := tf.connect(context.Background(), args)
		if err != nil {
			return err
		}
		defer closeFn()
		ids, owners := splitIDs(tf.fs.Args())
		if len(ids) == 0 && len(owners) == 0 && *constraint == "" && !*all {
			return usagef("want job ids (cluster or cluster.proc), owner names, -constraint EXPR or -all")
		}
		// Each restriction selects jobs of its own, as in condor_rm.
		var alts []string
		for _, o := range owners {
			alts = append(alts, "Owner == "+classad.String(o).String())
		}
		if *constraint != "" {
			alts = append(alts, "("+*constraint+")")
		}
		if *all {
			alts = []string{"true"}
		}
		cons := ""
		if len(alts) > 0 {
			// Like condor_rm, a selection skips the jobs the action
			// cannot apply to, rather than reporting each.
			cons = "(" + strings.Join(alts, " || ") + ") && " + applicable
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		reply, err := client.Act(ctx, &wire.ActRequest{Action: action, Ids: ids, Reason: reason, Constraint: cons})
		if err != nil {
			return rpcError(name, err)
		}
		if len(reply.Results) == 0 {
			fmt.Fprintln(stdout, "No job you may act on matched.")
			return exitError(1)
		}
		failed := 0
		for _, r := range reply.Results {
			if r.Ok {
				fmt.Fprintf(stdout, "Job %s %s\n", r.Id, done)
			} else {
				failed++
				fmt.Fprintf(stdout, "Job %s not %s: %s\n", r.Id, done, r.Error)
			}
		}
		if failed > 0 {
			return exitError(1)
		}
		return nil
	}
}

// runWait waits for jobs, as condor_wait does, on a job event log:
//
//	harrier wait [-wait SECONDS] [-num N] [-echo] [-status] LOGFILE [ID]
//
// exits 0 once the jobs of the log (or of cluster or job ID, or any N of
// them) have ended, and 1 on error or when the time expires. Given a job id
// alone it asks the agent instead: it waits until the job leaves the queue
// and exits 0 if it completed, 1 if it left otherwise or on error, and 2 on
// timeout.
func runWait(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("wait")
	timeout := tf.fs.Float64("wait", 0, "give up after this many seconds (0: wait forever)")
	tf.fs.Float64Var(timeout, "timeout", 0, "same as -wait")
	num := tf.fs.Int("num", 0, "with a log: wait for this many jobs to end (0: all)")
	echo := tf.fs.Bool("echo", false, "with a log: print its events")
	verbose := tf.fs.Bool("status", false, "with a log: print when each job starts and ends")
	if err := tf.parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*timeout*float64(time.Second)))
		defer cancel()
	}
	if ids, _ := splitIDs(tf.fs.Args()); tf.fs.NArg() == 1 && len(ids) == 1 {
		return waitInQueue(ctx, tf, ids[0], stdout)
	}
	if tf.fs.NArg() < 1 || tf.fs.NArg() > 2 {
		return usagef("want a job event log and at most one job id, or one job id")
	}
	w := &waitLog{path: tf.fs.Arg(0), sel: tf.fs.Arg(1), num: *num, echo: *echo, status: *verbose, out: stdout}
	if ids, _ := splitIDs([]string{w.sel}); w.sel != "" && len(ids) == 0 {
		return usagef("bad job id %q: want cluster or cluster.proc", w.sel)
	}
	return w.run(ctx)
}

// waitInQueue waits until a job leaves the agent's queue, or completes
// there (one kept by its leave_in_queue).
func waitInQueue(ctx context.Context, tf toolFlags, id string, stdout io.Writer) error {
	client, closeFn, err := tf.client(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	req := &wire.JobQueryRequest{Ids: []string{id}}
	for {
		n, err := countJobs(ctx, client, &wire.JobQueryRequest{Ids: req.Ids, Constraint: "JobStatus =!= 4"})
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(stdout, "Timed out waiting for job %s\n", id)
				return exitError(2)
			}
			return rpcError("wait", err)
		}
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stdout, "Timed out waiting for job %s\n", id)
			return exitError(2)
		case <-time.After(200 * time.Millisecond):
		}
	}
	hctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last string
	q, err := client.Query(hctx, req)
	if err == nil {
		err = receive(q, func(text string) error { last = text; return nil })
	}
	if err != nil {
		return rpcError("wait", err)
	}
	if last == "" {
		h, err := client.History(hctx, req)
		if err != nil {
			return rpcError("wait", err)
		}
		if err := receive(h, func(text string) error { last = text; return nil }); err != nil {
			return rpcError("wait", err)
		}
	}
	if last == "" {
		return fmt.Errorf("job %s is neither in the queue nor in the history", id)
	}
	ad, err := classad.Parse(last)
	if err != nil {
		return err
	}
	st, _ := ad.EvalInt("JobStatus")
	if st != 4 {
		fmt.Fprintf(stdout, "Job %s was removed\n", id)
		return exitError(1)
	}
	fmt.Fprintf(stdout, "All jobs done.\n")
	return nil
}

// countJobs returns how many jobs in the queue the request selects.
func countJobs(ctx context.Context, client wire.ScheddClient, req *wire.JobQueryRequest) (int, error) {
	stream, err := client.Query(ctx, req)
	if err != nil {
		return 0, err
	}
	n := 0
	err = receive(stream, func(string) error { n++; return nil })
	return n, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"harrier.dev/harrier/dagman"
)

// dagmanRestart is condor_dagman's exit status when it was stopped (not
// removed) and should be started again to recover: its job's
// on_exit_remove keeps it in the queue.
const dagmanRestart = 3

// runDagman runs a DAG to its end, submitting its nodes' jobs to the
// pool's agent over its socket, as condor_dagman does; harrier submit-dag queues it as a scheduler
// universe job that the agent starts. SIGUSR1 (the job's remove_kill_sig)
// removes the DAG: its node jobs are removed and a rescue DAG is written.
// SIGTERM and SIGINT stop it leaving its jobs queued, for the next run to
// recover. It exits as condor_dagman does: 0 when the DAG succeeded, 1 when
// nodes failed, 2 when it was removed, ABORT-DAG-ON's RETURN value, 3 when
// stopped.
func runDagman(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("dagman")
	opts := dagmanFlags(tf)
	if err := tf.parse(args); err != nil {
		return err
	}
	if tf.fs.NArg() != 1 {
		return usagef("want one DAG file")
	}
	path, err := filepath.Abs(tf.fs.Arg(0))
	if err != nil {
		return err
	}
	dag, err := dagman.ParseFile(path, dagman.ParseOptions{})
	if err != nil {
		return err
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		return err
	}
	defer closeFn()
	me, err := user.Current()
	if err != nil {
		return fmt.Errorf("who runs the DAG: %w", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the harrier binary: %w", err)
	}
	sub := &agentSubmitter{client: client, owner: me.Username, bin: bin, pool: filepath.Dir(pc.path)}
	// The agent names the DAG's own job (HTCondor's CONDOR_ID); its node
	// jobs carry its cluster.
	if id := os.Getenv("CONDOR_ID"); id != "" {
		cluster, _, _ := strings.Cut(id, ".")
		sub.dagJob, _ = strconv.Atoi(cluster)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				cancel(dagman.ErrRemoved)
				return
			}
			cancel(errors.New("stopped by " + s.String()))
		case <-ctx.Done():
		}
	}()
	res, err := dagman.Run(ctx, dag, sub, *opts)
	if err != nil {
		return err
	}
	if res.Rescue != "" {
		fmt.Fprintf(stdout, "rescue DAG: %s\n", res.Rescue)
	}
	if res.Stopped {
		return exitError(dagmanRestart)
	}
	if res.ExitCode != 0 {
		return exitError(res.ExitCode)
	}
	return nil
}

// dagmanFlags are condor_dagman's options that harrier dagman and harrier
// submit-dag share.
func dagmanFlags(tf toolFlags) *dagman.Options {
	var o dagman.Options
	tf.fs.IntVar(&o.MaxJobs, "maxjobs", 0, "node jobs (clusters) queued at once (0: the CONFIG file's, else no limit)")
	tf.fs.IntVar(&o.MaxIdle, "maxidle", 0, "no submission while this many node job procs are idle (0: the CONFIG file's, else 1000)")
	tf.fs.IntVar(&o.MaxPre, "maxpre", 0, "PRE scripts running at once (0: the CONFIG file's, else 20)")
	tf.fs.IntVar(&o.MaxPost, "maxpost", 0, "POST scripts running at once (0: the CONFIG file's, else 20)")
	tf.fs.IntVar(&o.DoRescueFrom, "dorescuefrom", 0, "apply this rescue DAG rather than the newest")
	tf.fs.Func("autorescue", "0: run the DAG file as it is, whatever rescue DAGs exist", func(v string) error {
		switch v {
		case "0", "1":
			o.NoRescue = v == "0"
			return nil
		}
		return fmt.Errorf("want 0 or 1, not %q", v)
	})
	tf.fs.BoolVar(&o.AlwaysRunPost, "AlwaysRunPost", false, "run a node's POST script after its PRE script failed")
	return &o
}

// dagmanArgs are the options of o as harrier dagman reads them.
func dagmanArgs(o *dagman.Options) []string {
	var args []string
	for _, f := range []struct {
		name string
		v    int
	}{{"maxjobs", o.MaxJobs}, {"maxidle", o.MaxIdle}, {"maxpre", o.MaxPre}, {"maxpost", o.MaxPost}, {"dorescuefrom", o.DoRescueFrom}} {
		if f.v != 0 {
			args = append(args, "-"+f.name, strconv.Itoa(f.v))
		}
	}
	if o.NoRescue {
		args = append(args, "-autorescue", "0")
	}
	if o.AlwaysRunPost {
		args = append(args, "-AlwaysRunPost")
	}
	return args
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/dagman"
	"harrier.dev/harrier/jobargs"
)

// runSubmitDag queues a DAG as condor_submit_dag does: it checks the DAG
// file, writes FILE.dag.condor.sub, a scheduler universe job that runs
// harrier dagman on this machine, and submits it. The agent starts that
// job as the user, starts it again if it dies before the DAG is done (its
// on_exit_remove, condor_submit_dag's), and harrier rm of it removes the
// DAG (its remove_kill_sig, SIGUSR1).
func runSubmitDag(args []string, stdin io.Reader, stdout io.Writer) error {
	tf := newToolFlags("submit-dag")
	opts := dagmanFlags(tf)
	noSubmit := tf.fs.Bool("no_submit", false, "write FILE.dag.condor.sub and submit nothing")
	batch := tf.fs.String("batch-name", "", "the DAG job's batch name (default FILE.dag+CLUSTER)")
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
	// A DAG with an error queues nothing.
	if _, err := dagman.ParseFile(path, dagman.ParseOptions{}); err != nil {
		return err
	}
	pool := *tf.pool
	if pool == "" {
		pool = os.Getenv("HARRIER_POOL")
	}
	if pool == "" {
		return usagef("no pool: give --pool DIR or set HARRIER_POOL")
	}
	if pool, err = filepath.Abs(pool); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the harrier binary: %w", err)
	}
	sub := path + ".condor.sub"
	if err := atomicfile.Write(sub, []byte(dagJobDescription(bin, pool, path, *batch, dagmanArgs(opts))), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", sub, err)
	}
	base := filepath.Base(path)
	fmt.Fprintf(stdout, "File for submitting this DAG to Harrier : %s.condor.sub\n", base)
	fmt.Fprintf(stdout, "Log of DAGMan debugging messages        : %s.dagman.out\n", base)
	fmt.Fprintf(stdout, "Log of harrier dagman's output          : %s.lib.out\n", base)
	fmt.Fprintf(stdout, "Log of harrier dagman's error messages  : %s.lib.err\n", base)
	fmt.Fprintf(stdout, "Log of the life of harrier dagman itself: %s.dagman.log\n\n", base)
	if *noSubmit {
		fmt.Fprintln(stdout, "-no_submit given, not submitting DAG to Harrier.")
		return nil
	}
	fmt.Fprintln(stdout, "Submitting job(s).")
	return runSubmit([]string{"-pool", pool, sub}, stdin, stdout)
}

// dagJobDescription is the submit description of a DAG's own job, as
// condor_submit_dag writes it.
func dagJobDescription(bin, pool, dag, batch string, opts []string) string {
	args := append(append([]string{"dagman", "-pool", pool}, opts...), "--", dag)
	if batch == "" {
		batch = filepath.Base(dag) + "+$(Cluster)"
	}
	lines := []string{
		"# The job of DAG " + dag + ", written by harrier submit-dag.",
		"universe = scheduler",
		"executable = " + bin,
		`arguments = "` + strings.ReplaceAll(jobargs.Join(args), `"`, `""`) + `"`,
		"initialdir = " + filepath.Dir(dag),
		// The DAG's scripts and harrier submit see the user's usual
		// environment; the pool is named in the arguments.
		"getenv = PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, PYTHONPATH, PERL*, HARRIER_*",
		"output = " + dag + ".lib.out",
		"error = " + dag + ".lib.err",
		"log = " + dag + ".dagman.log",
		"batch_name = " + batch,
		"remove_kill_sig = SIGUSR1",
		// Started again unless it ended as condor_dagman ends: 0 done, 1
		// failed, 2 removed (and a crash, SIGSEGV, is not retried).
		"on_exit_remove = (ExitSignal =?= 11 || (ExitCode =!= UNDEFINED && ExitCode >= 0 && ExitCode <= 2))",
		"queue",
	}
	return strings.Join(lines, "\n") + "\n"
}

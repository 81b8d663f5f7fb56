package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"harrier.dev/harrier/agent/submit"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// runSubmit queues the jobs a submit description describes, as
// condor_submit does: parse and check the whole file first, so that a bad
// file queues nothing, then ask the agent for a cluster and queue it in one
// transaction. The description comes from a file, or from standard input
// when the file is "-" or not given; "name=value" arguments are read before
// it and -append lines just before its queue statement.
func runSubmit(args []string, stdin io.Reader, stdout io.Writer) error {
	tf := newToolFlags("submit")
	var appends stringList
	tf.fs.Var(&appends, "append", "a submit command read just before the queue statement (repeatable)")
	tf.fs.Var(&appends, "a", "same as -append")
	batch := tf.fs.String("batch-name", "", "the jobs' batch name (JobBatchName), over the file's")
	dryRun := tf.fs.String("dry-run", "", "write the job ads to this file (- for standard output) and queue nothing")
	file := tf.fs.String("file", "", "the submit file, as if given as an argument")
	terse := tf.fs.Bool("terse", false, "print only the range of job ids queued")
	verbose := tf.fs.Bool("verbose", false, "print the job ads queued (implied by the file -)")
	maxJobs := tf.fs.Int("maxjobs", 0, "queue nothing if the description makes more jobs than this (0: no limit)")
	spool := tf.fs.Bool("spool", false, "send the jobs' inputs with them to the agent's spool, where they run from; "+
		"fetch their outputs with harrier transfer-data (needs should_transfer_files = YES or IF_NEEDED)")
	tf.accept("harrier submit queues one cluster per submission", "single-cluster")
	tf.refuse("not yet", "unused")
	tf.refuse("refused: "+localAgent, "name=", "addr=")
	tf.refuse("refused: Harrier has no MyProxy credentials", "password=")
	tf.refuse("refused: -spool sends the inputs; there is no other transfer method", "stm=")
	tf.refuse("not yet: use -dry-run FILE", "dump=")
	tf.refuse("not yet: Harrier has no interactive jobs", "interactive")
	tf.refuse("not yet: max_idle or max_materialize in the submit file makes a cluster materialize late", "factory")
	tf.refuse("not yet", "disable", "allow-crlf-script")
	args, queue := takeQueue(args)
	if err := tf.parse(args); err != nil {
		return err
	}
	if queue != "" {
		// condor_submit's -queue is a queue statement the file lacks.
		appends = append(appends, queue)
	}
	path := *file
	var defines []string
	for _, a := range tf.fs.Args() {
		if name, _, ok := strings.Cut(a, "="); ok && name != "" {
			defines = append(defines, a)
			continue
		}
		if path != "" {
			return usagef("want one submit file, not %q and %q", path, a)
		}
		path = a
	}
	src, name, dir, err := readDescription(path, stdin)
	if err != nil {
		return err
	}
	if path == "-" && !*terse {
		*verbose = true // as condor_submit does
	}
	owner := "unknown"
	if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The description may run commands (include command, queue from cmd |):
	// this tool runs as the user who submits, as condor_submit does.
	env := submit.Env{Dir: dir, Owner: owner, Getenv: os.LookupEnv, Environ: os.Environ(),
		Now: time.Now(), Command: submit.Exec(ctx), Defines: defines, Append: appends}
	desc, err := submit.Parse(src, name, env)
	if err != nil {
		return err
	}
	for _, w := range desc.Warnings() {
		fmt.Fprintf(os.Stderr, "harrier submit: %v\n", w)
	}
	var spooled [][]spoolItem
	finish := func(ads []*classad.ClassAd) error {
		if *maxJobs > 0 && len(ads) > *maxJobs {
			return fmt.Errorf("the description makes %d jobs, more than -maxjobs %d: nothing is queued", len(ads), *maxJobs)
		}
		if *spool {
			var err error
			if spooled, err = planSpool(ads); err != nil {
				return err
			}
		}
		for _, ad := range ads {
			// condor_submit records the cluster's size, which the batch
			// view of harrier q needs to count the jobs that are done.
			ad.SetInt("TotalSubmitProcs", int64(len(ads)))
			if *batch != "" {
				ad.SetString("JobBatchName", *batch)
			}
		}
		return nil
	}
	if *dryRun != "" {
		// Nothing reaches the agent, so the cluster is 1, as in HTCondor.
		ads, err := desc.Jobs(1, env)
		if err != nil {
			return err
		}
		if err := finish(ads); err != nil {
			return err
		}
		return writeDryRun(*dryRun, ads, stdout)
	}
	if *tf.remote != "" {
		if *spool {
			return errors.New("-spool sends the inputs from this machine, and a remote submission sends no files: submit on the submit machine, or name the inputs by URL")
		}
		// Checked before a cluster is reserved: the ads' cluster does
		// not change what they name.
		ads, err := desc.Jobs(1, env)
		if err != nil {
			return err
		}
		if err := checkRemoteJobs(ads, dir); err != nil {
			return err
		}
	}
	client, closeFn, err := tf.client(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		return rpcError("new cluster", err)
	}
	// A description that fails only now (a missing executable, a bad
	// queue file) leaves its cluster number unused, as in HTCondor.
	ads, err := desc.Jobs(int(nc.Cluster), env)
	if err != nil {
		return err
	}
	if err := finish(ads); err != nil {
		return err
	}
	req := submitRequest(nc.Cluster, ads)
	var reply *wire.SubmitReply
	if *spool {
		reply, err = submitSpooled(ctx, client, req, ads, spooled)
	} else if reply, err = client.Submit(ctx, req); err != nil {
		err = submitError(err, req)
	}
	if err != nil {
		return err
	}
	switch {
	case *terse:
		fmt.Fprintf(stdout, "%d.0 - %d.%d\n", nc.Cluster, nc.Cluster, reply.Count-1)
		return nil
	case *verbose:
		for _, ad := range ads {
			fmt.Fprintln(stdout, ad.MarshalOld())
		}
	}
	fmt.Fprintf(stdout, "%d job(s) submitted to cluster %d.\n", reply.Count, nc.Cluster)
	return nil
}

// takeQueue takes condor_submit's "-queue ARGS" from args: the words after
// it up to the next option make a queue statement.
func takeQueue(args []string) (rest []string, queue string) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a != "-queue" && a != "--queue" {
			continue
		}
		j := i + 1
		for j < len(args) && !strings.HasPrefix(args[j], "-") {
			j++
		}
		rest = append(append(rest, args[:i]...), args[j:]...)
		return rest, strings.TrimSpace("queue " + strings.Join(args[i+1:j], " "))
	}
	return args, ""
}

// readDescription reads a submit description from path, or from stdin when
// path is "" or "-", and returns it with its name for messages and the
// directory its relative paths are relative to.
func readDescription(path string, stdin io.Reader) (src []byte, name, dir string, err error) {
	if path == "" || path == "-" {
		if src, err = io.ReadAll(stdin); err != nil {
			return nil, "", "", fmt.Errorf("read the submit description from standard input: %w", err)
		}
		dir, err = os.Getwd()
		return src, "(stdin)", dir, err
	}
	if src, err = os.ReadFile(path); err != nil {
		return nil, "", "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", "", err
	}
	return src, path, filepath.Dir(abs), nil
}

// writeDryRun writes the ads a submission would queue to path ("-" is
// stdout), in the old ClassAd syntax with a blank line after each, as
// harrier q -long prints them.
func writeDryRun(path string, ads []*classad.ClassAd, stdout io.Writer) error {
	var b strings.Builder
	for _, ad := range ads {
		b.WriteString(ad.MarshalOld())
		b.WriteString("\n")
	}
	if path == "-" {
		if _, err := io.WriteString(stdout, b.String()); err != nil {
			return err
		}
	} else if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write the dry-run ads: %w", err)
	}
	fmt.Fprintf(stdout, "%d job(s) dry-run to cluster 1.\n", len(ads))
	return nil
}

// stringList is a flag that may be given many times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, "\n") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// submitError explains a refused submission. A request larger than the
// agent's socket takes is refused by gRPC before the agent sees it, in
// gRPC's words: say which limit that is.
func submitError(err error, req *wire.SubmitRequest) error {
	if s, ok := status.FromError(err); ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max") {
		return fmt.Errorf("submit: a submission of %d bytes is more than the agent takes (MAX_SUBMISSION_BYTES): %s", proto.Size(req), s.Message())
	}
	return rpcError("submit", err)
}

// submitRequest builds the agent's request for a cluster: the attributes
// every job shares (the submit language hands them out as one shared
// expression) go once in the cluster ad, and each job carries only its own.
func submitRequest(cluster int32, ads []*classad.ClassAd) *wire.SubmitRequest {
	req := &wire.SubmitRequest{Cluster: cluster, Ads: make([]string, len(ads))}
	if len(ads) < 2 {
		for i, ad := range ads {
			req.Ads[i] = ad.String()
		}
		return req
	}
	common := classad.New()
	for _, name := range ads[0].Names() {
		e, _ := ads[0].Lookup(name)
		shared := true
		for _, ad := range ads[1:] {
			if x, ok := ad.Lookup(name); !ok || x != e {
				shared = false
				break
			}
		}
		if shared {
			common.Set(name, e)
		}
	}
	req.ClusterAd = common.String()
	for i, ad := range ads {
		own := classad.New()
		for _, name := range ad.Names() {
			if _, ok := common.Lookup(name); !ok {
				e, _ := ad.Lookup(name)
				own.Set(name, e)
			}
		}
		req.Ads[i] = own.String()
	}
	return req
}

// checkRemoteJobs refuses, before anything is queued, jobs that cannot be
// submitted to another host's agent: a remote submission sends no file,
// so a job's files are those of the submit machine, in an initialdir the
// description names as an absolute path there (where the job's shadow
// reads and writes them as its owner), and its executable is a program of
// the execute machine (transfer_executable = false). localDir is the
// directory relative paths would otherwise be taken from, which is this
// host's.
func checkRemoteJobs(ads []*classad.ClassAd, localDir string) error {
	for _, ad := range ads {
		iwd, _ := ad.EvalString("Iwd")
		if filepath.Clean(iwd) == filepath.Clean(localDir) {
			return errors.New("a remote submission sends no files: set initialdir to an absolute directory on the submit machine, where the job's files are read and written")
		}
		if transfer, ok := ad.EvalBool("TransferExecutable"); !ok || transfer {
			exe, _ := ad.EvalString("Cmd")
			return fmt.Errorf("a remote submission sends no files, and the executable %s would be sent from here: name a program of the execute machine with transfer_executable = false", exe)
		}
	}
	return nil
}

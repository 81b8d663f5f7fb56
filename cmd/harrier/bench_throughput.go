package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/agent/submit"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// runBenchThroughput measures jobs per second through a whole personal
// pool: agent, matchmaker and startds with real shadows and starters, each
// job running /bin/true. It can first fill the queue with idle jobs that
// match nothing, or held ones, to show how throughput holds up as the
// queue grows.
func runBenchThroughput(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench throughput", flag.ContinueOnError)
	jobs := fs.Int("jobs", 500, "jobs to run")
	startds := fs.Int("startds", 2, "startds in the pool")
	slots := fs.Int("slots", 4, "slots per startd")
	queue := fs.Int("queue", 0, "idle jobs (matching nothing) queued first")
	held := fs.Bool("held", false, "the jobs --queue queues are held rather than idle: in the queue, but neither advertised nor matched")
	sandbox := fs.String("sandbox", "process", "how jobs run: process or container")
	dir := fs.String("dir", "", "pool directory (default: a new temporary one, removed afterwards)")
	dag := fs.Bool("dag", false, "run the jobs as the nodes of one DAG (harrier submit-dag), to measure what DAGMan costs")
	chain := fs.Int("chain", 0, "with --dag: the DAG is a root with a fan-out of children and a chain of this many nodes beside it (0: independent nodes)")
	killAfter := fs.Duration("kill-dagman", 0, "with --dag: kill the DAG's harrier dagman with SIGKILL this long after the submission, for it to recover")
	profile := fs.String("profile", "", "sample the agent's CPU while the jobs run, into `PREFIX`.1, PREFIX.2, ... (a profile each 5 s; go tool pprof merges them)")
	store := fs.String("store", "", "where the agent keeps its job queue: embedded (the default) or a PostgreSQL database's postgres:// URL (as pool up --store)")
	inputMB := fs.Int("input-mb", 0, "each job has an input file of this many MB sent to it (should_transfer_files = YES)")
	image := fs.Bool("image", false, "with --sandbox container: the jobs run in their own image (universe = container), an OCI layout of busybox the bench writes")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if *jobs < 1 || *startds < 1 || *slots < 1 || *queue < 0 || *inputMB < 0 {
		return usagef("--jobs, --startds and --slots must be positive")
	}
	if *image && (*sandbox != "container" || *dag) {
		return usagef("--image is for plain jobs with --sandbox container")
	}
	if *dag && *inputMB > 0 {
		return usagef("--input-mb is for plain jobs, not --dag")
	}
	if *chain < 0 || *chain > 0 && *chain > *jobs-2 {
		return usagef("--chain must leave room for the root and a child in --jobs")
	}
	poolDir := *dir
	if poolDir == "" {
		tmp, err := os.MkdirTemp("", "harrier-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		// The slot user, who runs the jobs, works in the execute
		// directory inside.
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		poolDir = filepath.Join(tmp, "pool")
	}
	if err := createPool(poolDir); err != nil {
		return err
	}
	extra := fmt.Sprintf("\nNUM_SLOTS = %d\nSANDBOX = %s\nLOG_LEVEL = WARN\n", *slots, *sandbox)
	if *profile != "" {
		extra += "AGENT_PROFILING = true\n"
	}
	// The benchmark is the pool's one user: the agent takes all it queues.
	d := agent.DefaultLimits()
	extra += fmt.Sprintf("MAX_JOBS_PER_OWNER = %d\nMAX_JOBS_SUBMITTED = %d\nMAX_JOBS_PER_SUBMISSION = %d\n",
		max(d.MaxJobsPerOwner, *queue+*jobs), max(d.MaxJobsSubmitted, *queue+*jobs), max(d.MaxJobsPerSubmission, *queue, *jobs))
	storeConf, err := queueStoreConf(*store)
	if err != nil {
		return err
	}
	if err := appendFile(filepath.Join(poolDir, poolConfigName), extra+storeConf); err != nil {
		return err
	}
	if err := poolUp(poolDir, *startds, true, *store, io.Discard); err != nil {
		return err
	}
	defer poolDown(poolDir, io.Discard)
	pc, err := loadPoolConfig(filepath.Join(poolDir, poolConfigName))
	if err != nil {
		return err
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx := context.Background()

	if *queue > 0 {
		desc := "executable = /bin/true\nrequirements = false\n"
		if *held {
			desc += "hold = true\n"
		}
		if _, err := benchSubmit(ctx, client, desc+"queue "+strconv.Itoa(*queue)+"\n"); err != nil {
			return err
		}
	}
	if *profile != "" {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			profileAgent(pctx, pc, *profile)
		}()
		defer func() { stop(); <-done }()
	}
	desc := "executable = /bin/true\n"
	if *inputMB > 0 {
		input := filepath.Join(poolDir, "bench-input.dat")
		if err := os.WriteFile(input, bytes.Repeat([]byte("harrier\n"), *inputMB<<20/8), 0o644); err != nil {
			return err
		}
		desc += "should_transfer_files = YES\ntransfer_input_files = " + input + "\n"
	}
	if *image {
		img := filepath.Join(poolDir, "bench-image")
		if err := writeBenchImage(img); err != nil {
			return err
		}
		desc = "universe = container\ncontainer_image = " + img + "\ntransfer_executable = false\n" + desc
	}
	start := time.Now()
	var cluster int32
	if *dag {
		cluster, err = benchSubmitDag(poolDir, *jobs, *chain)
	} else {
		cluster, err = benchSubmit(ctx, client, desc+"queue "+strconv.Itoa(*jobs)+"\n")
	}
	if err != nil {
		return err
	}
	submitted := time.Since(start)
	waitFor := *jobs
	if *dag {
		waitFor = 1 // the DAG's own job leaves the queue once every node has
	}
	if *dag && *killAfter > 0 {
		time.Sleep(*killAfter)
		if err := killDagman(poolDir); err != nil {
			return err
		}
	}
	if err := waitGone(ctx, client, cluster, waitFor); err != nil {
		return err
	}
	elapsed := time.Since(start)
	storeName := storeEmbedded
	if *store != "" && *store != storeEmbedded {
		storeName = storePostgres
	}
	state := "idle"
	if *held {
		state = "held"
	}
	how := "jobs"
	if *dag {
		how = "DAG nodes"
	}
	if *inputMB > 0 {
		how += fmt.Sprintf(" with a %d MB input each", *inputMB)
	}
	if *image {
		how += " in their own image"
	}
	fmt.Fprintf(stdout, "%d %s (/bin/true, sandbox %s) on %d startds x %d slots, %d %s jobs queued, %s store: %.2f s (submit %.3f s), %.1f jobs/s\n",
		*jobs, how, *sandbox, *startds, *slots, *queue, state, storeName, elapsed.Seconds(), submitted.Seconds(), float64(*jobs)/elapsed.Seconds())
	if *dag {
		return dagFigures(poolDir, stdout)
	}
	return nil
}

// dagmanOutFigures are the lines of the .dagman.out that measure DAGMan
// itself: parse time, recovery, submission rate and memory.
var dagmanOutFigures = []string{"parsed in", "Recovery:", "spent submitting", "Peak resident memory", "STARTING UP"}

// dagFigures prints DAGMan's own figures from the bench DAG's .dagman.out.
func dagFigures(dir string, stdout io.Writer) error {
	out, err := os.ReadFile(filepath.Join(dir, "bench.dag.dagman.out"))
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(out)) {
		for _, f := range dagmanOutFigures {
			if strings.Contains(line, f) {
				fmt.Fprint(stdout, "  dagman: ", line)
			}
		}
	}
	return nil
}

// killDagman kills the bench DAG's running harrier dagman, named by the
// last start in its .dagman.out, with SIGKILL.
func killDagman(dir string) error {
	out, err := os.ReadFile(filepath.Join(dir, "bench.dag.dagman.out"))
	if err != nil {
		return err
	}
	const mark = "STARTING UP, pid "
	i := strings.LastIndex(string(out), mark)
	if i < 0 {
		return fmt.Errorf("no harrier dagman started yet")
	}
	var pid int
	if _, err := fmt.Sscanf(string(out[i+len(mark):]), "%d", &pid); err != nil {
		return fmt.Errorf("the pid of harrier dagman: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill harrier dagman %d: %w", pid, err)
	}
	return nil
}

// profileAgent writes 5-second CPU profiles of the agent to prefix.1,
// prefix.2, ... until ctx ends; a profile cut short is not written.
func profileAgent(ctx context.Context, pc *poolConfig, prefix string) {
	addr, err := os.ReadFile(metricsFile(runDirOf(pc), "agent"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile: the agent's address: %v\n", err)
		return
	}
	url := "http://" + strings.TrimSpace(string(addr)) + "/debug/pprof/profile?seconds=5"
	for n := 1; ctx.Err() == nil; n++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
		if err := os.WriteFile(fmt.Sprintf("%s.%d", prefix, n), data, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "profile: %v\n", err)
			return
		}
	}
}

// waitGone waits until jobs 0 to n-1 of cluster have left the queue, and
// fails if one is held. It asks for the first of them still queued, by
// job id, so that polling costs the agent the same whatever else is in
// its queue.
func waitGone(ctx context.Context, client wire.ScheddClient, cluster int32, n int) error {
	const window = 1000 // job ids asked for at once
	next := 0           // no job before it is queued
	for next < n {
		req := &wire.JobQueryRequest{Limit: 1}
		for p := next; p < min(n, next+window); p++ {
			req.Ids = append(req.Ids, fmt.Sprintf("%d.%d", cluster, p))
		}
		stream, err := client.Query(ctx, req)
		if err != nil {
			return rpcError("query", err)
		}
		first := -1
		err = receive(stream, func(text string) error {
			ad, err := classad.Parse(text)
			if err != nil {
				return err
			}
			p, _ := ad.EvalInt("ProcId")
			first = int(p)
			// A held job would never leave: the run cannot end.
			if st, _ := ad.EvalInt("JobStatus"); st == 5 {
				reason, _ := ad.EvalString("HoldReason")
				return fmt.Errorf("job %d.%d is held: %s", cluster, p, reason)
			}
			return nil
		})
		if err != nil {
			return rpcError("query", err)
		}
		if first < 0 {
			next += window
			continue
		}
		next = first
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// benchSubmitDag writes a DAG of n /bin/true nodes into dir, reading its
// nodes log every second, submits it with harrier submit-dag and returns
// the DAG job's cluster. The nodes are independent, or with chain > 0 a
// root with a fan-out of n-chain-1 children and, beside it, a chain of
// chain nodes.
func benchSubmitDag(dir string, n, chain int) (int32, error) {
	var b strings.Builder
	b.WriteString("CONFIG bench.dag.config\n")
	if chain == 0 {
		for i := range n {
			fmt.Fprintf(&b, "JOB n%d node.sub\n", i)
		}
	} else {
		b.WriteString("JOB root node.sub\n")
		for i := range n - chain - 1 {
			fmt.Fprintf(&b, "JOB f%d node.sub\nPARENT root CHILD f%d\n", i, i)
		}
		for i := range chain {
			fmt.Fprintf(&b, "JOB c%d node.sub\n", i)
			if i > 0 {
				fmt.Fprintf(&b, "PARENT c%d CHILD c%d\n", i-1, i)
			}
		}
	}
	files := map[string]string{"bench.dag": b.String(), "node.sub": "executable = /bin/true\nqueue\n",
		"bench.dag.config": "DAGMAN_USER_LOG_SCAN_INTERVAL = 1\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return 0, err
		}
	}
	var out bytes.Buffer
	if err := runSubmitDag([]string{"-pool", dir, filepath.Join(dir, "bench.dag")}, nil, &out); err != nil {
		return 0, err
	}
	var cluster int32
	i := strings.Index(out.String(), "submitted to cluster ")
	if i < 0 {
		return 0, fmt.Errorf("submit-dag said %q", out.String())
	}
	if _, err := fmt.Sscanf(out.String()[i:], "submitted to cluster %d.", &cluster); err != nil {
		return 0, fmt.Errorf("submit-dag said %q: %w", out.String(), err)
	}
	return cluster, nil
}

// benchSubmit queues the jobs of a submit description.
func benchSubmit(ctx context.Context, client wire.ScheddClient, desc string) (int32, error) {
	env := submit.Env{Dir: os.TempDir(), Owner: "bench", Now: time.Now()}
	d, err := submit.Parse([]byte(desc), "bench.sub", env)
	if err != nil {
		return 0, err
	}
	nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		return 0, rpcError("new cluster", err)
	}
	ads, err := d.Jobs(int(nc.Cluster), env)
	if err != nil {
		return 0, err
	}
	if _, err := client.Submit(ctx, submitRequest(nc.Cluster, ads)); err != nil {
		return 0, rpcError("submit", err)
	}
	return nc.Cluster, nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

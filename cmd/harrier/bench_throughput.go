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
	profile := fs.String("profile", "", "sample the agent's CPU while the jobs run, into `PREFIX`.1, PREFIX.2, ... (a profile each 5 s; go tool pprof merges them)")
	store := fs.String("store", "", "where the agent keeps its job queue: embedded (the default) or a PostgreSQL database's postgres:// URL (as pool up --store)")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if *jobs < 1 || *startds < 1 || *slots < 1 || *queue < 0 {
		return usagef("--jobs, --startds and --slots must be positive")
	}
	poolDir := *dir
	if poolDir == "" {
		tmp, err := os.MkdirTemp("", "harrier-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
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
	start := time.Now()
	var cluster int32
	if *dag {
		cluster, err = benchSubmitDag(poolDir, *jobs)
	} else {
		cluster, err = benchSubmit(ctx, client, "executable = /bin/true\nqueue "+strconv.Itoa(*jobs)+"\n")
	}
	if err != nil {
		return err
	}
	submitted := time.Since(start)
	waitFor := *jobs
	if *dag {
		waitFor = 1 // the DAG's own job leaves the queue once every node has
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
	fmt.Fprintf(stdout, "%d %s (/bin/true, sandbox %s) on %d startds x %d slots, %d %s jobs queued, %s store: %.2f s (submit %.3f s), %.1f jobs/s\n",
		*jobs, how, *sandbox, *startds, *slots, *queue, state, storeName, elapsed.Seconds(), submitted.Seconds(), float64(*jobs)/elapsed.Seconds())
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

// waitGone waits until jobs 0 to n-1 of cluster have left the queue. It
// asks for the first of them still queued, by job id, so that polling
// costs the agent the same whatever else is in its queue.
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

// benchSubmitDag writes a DAG of n independent /bin/true nodes into dir,
// reading its nodes log every second, submits it with harrier submit-dag
// and returns the DAG job's cluster.
func benchSubmitDag(dir string, n int) (int32, error) {
	var b strings.Builder
	b.WriteString("CONFIG bench.dag.config\n")
	for i := range n {
		fmt.Fprintf(&b, "JOB n%d node.sub\n", i)
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

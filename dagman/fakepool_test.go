package dagman

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/agent/submit"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/jobargs"
	"harrier.dev/harrier/joblog"
)

// procPool is a Submitter standing in for a pool: it reads a node's submit
// file with the submit language (the node's VARS before or after it), and
// runs each proc's executable as a real process of its own session, the
// test binary re-executed as fakeJob, which writes the Execute and
// Terminated (or, removed, Aborted) events to the nodes log. Its jobs
// outlive the process that submitted them, as a pool's jobs outlive a
// killed DAGMan; its state (the next cluster, the jobs' pids) is in dir,
// so that a recovering process can remove jobs another one submitted.
type procPool struct {
	dir string
	mu  sync.Mutex // serialises cluster numbers
}

// fakeJobEnv carries a fake job's spec to the re-executed test binary.
const fakeJobEnv = "DAGMAN_TEST_FAKE_JOB"

type fakeJobSpec struct {
	Log, PidFile  string
	Cluster, Proc int
	Exe, Dir      string
	Args, Env     []string
	Out, Err      string
}

func newProcPool(t testing.TB) *procPool {
	return &procPool{dir: t.TempDir()}
}

func (p *procPool) nextCluster() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := filepath.Join(p.dir, "next-cluster")
	n := 1
	if b, err := os.ReadFile(path); err == nil {
		if n, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return 0, err
		}
	}
	// Replaced whole: a DAGMan killed here must not leave it empty.
	return n, writeFileAtomic(path, []byte(strconv.Itoa(n+1)))
}

func (p *procPool) Submit(ctx context.Context, j Job) (int, int, error) {
	if j.SubDAG {
		return p.submitDAG(j)
	}
	env := submit.Env{Dir: j.Dir, Owner: "dagtest"}
	for _, v := range j.Vars {
		line := v.Name + " = " + v.Value
		if v.Append {
			env.Append = append(env.Append, line)
		} else {
			env.Defines = append(env.Defines, line)
		}
	}
	file := j.File
	if !filepath.IsAbs(file) {
		file = filepath.Join(j.Dir, file)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	desc, err := submit.Parse(src, file, env)
	if err != nil {
		return 0, 0, err
	}
	cluster, err := p.nextCluster()
	if err != nil {
		return 0, 0, err
	}
	ads, err := desc.Jobs(cluster, env)
	if err != nil {
		return 0, 0, err
	}
	specs := make([]fakeJobSpec, len(ads))
	for i, ad := range ads {
		args, err := jobargs.Split(str(ad, "Arguments"))
		if err != nil {
			return 0, 0, err
		}
		specs[i] = fakeJobSpec{Log: j.Log, PidFile: filepath.Join(p.dir, fmt.Sprintf("%d.%d.pid", cluster, i)),
			Cluster: cluster, Proc: i, Exe: str(ad, "Cmd"), Dir: str(ad, "Iwd"), Args: args,
			Out: str(ad, "Out"), Err: str(ad, "Err")}
	}
	if err := p.start(specs, j.Node); err != nil {
		return 0, 0, err
	}
	return cluster, len(ads), nil
}

// submitDAG runs a SUBDAG EXTERNAL node's DAG as its job: the test binary
// as DAGMan (runDAGChild), with a pool directory of its own.
func (p *procPool) submitDAG(j Job) (int, int, error) {
	cluster, err := p.nextCluster()
	if err != nil {
		return 0, 0, err
	}
	file := j.File
	if !filepath.IsAbs(file) {
		file = filepath.Join(j.Dir, file)
	}
	sub, _ := json.Marshal(runDAGSpec{DAG: file, PoolDir: filepath.Join(p.dir, fmt.Sprintf("dag-%d", cluster))})
	if err := os.MkdirAll(filepath.Join(p.dir, fmt.Sprintf("dag-%d", cluster)), 0o755); err != nil {
		return 0, 0, err
	}
	spec := fakeJobSpec{Log: j.Log, PidFile: filepath.Join(p.dir, fmt.Sprintf("%d.0.pid", cluster)), Cluster: cluster,
		Exe: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{runDAGEnv + "=" + string(sub)}, Dir: j.Dir}
	return cluster, 1, p.start([]fakeJobSpec{spec}, j.Node)
}

// start runs the jobs, each in a session of its own, then queues them: a
// job runs only once its submit event is in the log, so that a DAGMan
// killed halfway through a submission leaves every proc either queued
// (its event written: it runs) or not (it never runs), as a scheduler's
// queue does.
func (p *procPool) start(specs []fakeJobSpec, node string) error {
	for _, s := range specs {
		b, _ := json.Marshal(s)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fakeJobEnv+"="+string(b))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(s.PidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
		go cmd.Wait() //nolint:errcheck // reaps the job; its result is in the log
	}
	for _, s := range specs {
		if err := joblog.Append(s.Log, joblog.Event{Type: joblog.Submit, Cluster: s.Cluster, Proc: s.Proc, Time: time.Now(), Host: "127.0.0.1:0", DAGNode: node}); err != nil {
			return err
		}
	}
	return nil
}

func str(ad *classad.ClassAd, name string) string {
	e, ok := ad.Lookup(name)
	if !ok {
		return ""
	}
	v, _ := e.AsLiteral()
	s, _ := v.StringValue()
	return s
}

// Remove signals the cluster's jobs, which write their Aborted events.
func (p *procPool) Remove(ctx context.Context, cluster int) error {
	files, _ := filepath.Glob(filepath.Join(p.dir, fmt.Sprintf("%d.*.pid", cluster)))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pid, _ := strconv.Atoi(string(b))
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(f + ".ready"); err == nil {
				break
			}
		}
		syscall.Kill(pid, syscall.SIGTERM)
	}
	return nil
}

// runFakeJob is the re-executed test binary as one job: it runs the
// executable and writes its events, or is removed (SIGTERM).
func runFakeJob(specJSON string) int {
	var s fakeJobSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// Remove waits for this: a SIGTERM from now on is a removal.
	if err := os.WriteFile(s.PidFile+".ready", nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	write := func(e joblog.Event) {
		e.Cluster, e.Proc, e.Time = s.Cluster, s.Proc, time.Now()
		if err := joblog.Append(s.Log, e); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	// The job is queued once its submit event is in the log; a DAGMan
	// that died before writing it never queued the job.
	for deadline := time.Now().Add(10 * time.Second); !submitted(s); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0
		}
	}
	select {
	case <-term:
		write(joblog.Event{Type: joblog.Aborted, Reason: "via DAGMan's Remove"})
		return 0
	default:
	}
	write(joblog.Event{Type: joblog.Execute, Host: "127.0.0.1:1"})
	cmd := exec.Command(s.Exe, s.Args...)
	cmd.Dir = s.Dir
	// The job is no fake job, nor DAGMan, unless its spec says so.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, fakeJobEnv+"=") && !strings.HasPrefix(kv, runDAGEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, s.Env...)
	for i, path := range []string{s.Out, s.Err} {
		if path == "" || path == "/dev/null" {
			continue
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.Dir, path)
		}
		out, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer out.Close()
		if i == 0 {
			cmd.Stdout = out
		} else {
			cmd.Stderr = out
		}
	}
	if err := cmd.Start(); err != nil {
		write(joblog.Event{Type: joblog.Terminated, Normal: true, ReturnValue: 127})
		return 0
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-term:
		cmd.Process.Kill()
		<-done
		write(joblog.Event{Type: joblog.Aborted, Reason: "via DAGMan's Remove"})
		return 0
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			write(joblog.Event{Type: joblog.Terminated, Normal: true})
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			write(joblog.Event{Type: joblog.Terminated, Normal: true, ReturnValue: ee.ExitCode()})
		default:
			sig := 0
			if ee != nil {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
					sig = int(ws.Signal())
				}
			}
			write(joblog.Event{Type: joblog.Terminated, Signal: sig})
		}
	}
	return 0
}

// submitted reports whether the job's submit event is in the log.
func submitted(s fakeJobSpec) bool {
	text, err := os.ReadFile(s.Log)
	if err != nil {
		return false
	}
	events, _ := joblog.Parse(text)
	for _, e := range events {
		if e.Type == joblog.Submit && e.Cluster == s.Cluster && e.Proc == s.Proc {
			return true
		}
	}
	return false
}

// instantPool is an in-process Submitter whose jobs end as they are
// submitted, with the exit value exit gives the node (0 if exit is nil):
// the engine's own cost, without a pool's. Events are not fsynced.
type instantPool struct {
	mu      sync.Mutex
	cluster int
	exit    func(node string, retry int) int
	wake    chan struct{}
}

func newInstantPool() *instantPool { return &instantPool{wake: make(chan struct{}, 1)} }

func (p *instantPool) Notify() <-chan struct{} { return p.wake }

func (p *instantPool) Submit(ctx context.Context, j Job) (int, int, error) {
	p.mu.Lock()
	p.cluster++
	c := p.cluster
	p.mu.Unlock()
	code := 0
	if p.exit != nil {
		code = p.exit(j.Node, j.Retry)
	}
	now := time.Now()
	text := joblog.Event{Type: joblog.Submit, Cluster: c, Time: now, Host: "127.0.0.1:0", DAGNode: j.Node}.Format() +
		joblog.Event{Type: joblog.Execute, Cluster: c, Time: now, Host: "127.0.0.1:1"}.Format() +
		joblog.Event{Type: joblog.Terminated, Cluster: c, Time: now, Normal: true, ReturnValue: code}.Format()
	f, err := os.OpenFile(j.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, 0, err
	}
	_, err = f.WriteString(text)
	f.Close()
	if err != nil {
		return 0, 0, err
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return c, 1, nil
}

func (p *instantPool) Remove(ctx context.Context, cluster int) error { return nil }

package dagman

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/joblog"
)

// runDAGEnv makes the test binary run one DAG (its spec in JSON) with a
// procPool and exit with condor_dagman's exit code: a DAGMan process the
// test can kill.
const runDAGEnv = "DAGMAN_TEST_RUN_DAG"

type runDAGSpec struct {
	DAG, PoolDir string
}

func runDAGChild(specJSON string) int {
	var s runDAGSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 100
	}
	dag, err := ParseFile(s.DAG, ParseOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 100
	}
	res, err := Run(context.Background(), dag, &procPool{dir: s.PoolDir}, Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 100
	}
	return res.ExitCode
}

// startDAGMan runs the DAG in a child process.
func startDAGMan(t *testing.T, dagPath, poolDir string) *exec.Cmd {
	t.Helper()
	b, _ := json.Marshal(runDAGSpec{DAG: dagPath, PoolDir: poolDir})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runDAGEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// Killing DAGMan with SIGKILL while its nodes' jobs run, twice, and
// running it again each time loses no node and runs none twice: the
// restarted process finds the lock file, rebuilds its state from the
// nodes log and follows the jobs the dead one submitted.
func TestKillRecovery(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	// Three chains of four, joined at the end; every job sleeps, every
	// node of chain b has a POST script.
	var b strings.Builder
	var nodes []string
	for _, c := range []string{"a", "b", "c"} {
		for i := 1; i <= 4; i++ {
			n := fmt.Sprintf("%s%d", c, i)
			nodes = append(nodes, n)
			fmt.Fprintf(&b, "JOB %s job.sub\n", n)
			if i > 1 {
				fmt.Fprintf(&b, "PARENT %s%d CHILD %s\n", c, i-1, n)
			}
			writeFiles(t, dir, map[string]string{n + ".sleep": "0.4"})
		}
	}
	nodes = append(nodes, "end")
	b.WriteString("JOB end job.sub\nPARENT a4 b4 c4 CHILD end\nSCRIPT POST ALL_NODES post.sh $JOB $RETURN\n")
	dagPath := filepath.Join(dir, "test.dag")
	writeFiles(t, dir, map[string]string{"test.dag": b.String()})
	logPath := dagPath + ".nodes.log"
	pool := t.TempDir()

	// terminated counts the jobs that ended so far.
	terminated := func() int {
		f, err := os.Open(logPath)
		if err != nil {
			return 0
		}
		defer f.Close()
		events, _ := joblog.Read(f)
		n := 0
		for _, e := range events {
			if e.Type == joblog.Terminated {
				n++
			}
		}
		return n
	}
	for _, killAfter := range []int{2, 7} {
		cmd := startDAGMan(t, dagPath, pool)
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		for terminated() < killAfter {
			select {
			case <-exited:
				t.Fatalf("DAGMan exited (%v) before it was killed", cmd.ProcessState)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		if _, err := os.Stat(dagPath + ".lock"); err != nil {
			t.Fatalf("the killed DAGMan left no lock file: %v", err)
		}
	}
	cmd := startDAGMan(t, dagPath, pool)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the last DAGMan: %v", err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		out, _ := os.ReadFile(dagPath + ".dagman.out")
		nodesLog, _ := os.ReadFile(logPath)
		t.Fatalf("the last DAGMan did not finish.\ndagman.out:\n%s\nnodes log:\n%s", out, nodesLog)
	}

	runs := map[string]int{}
	for _, l := range lines(t, filepath.Join(dir, "runs.txt")) {
		runs[strings.Fields(l)[0]]++
	}
	events := readLog(t, logPath)
	submits, posts := map[string]int{}, map[string]int{}
	for _, e := range events {
		switch e.Type {
		case joblog.Submit:
			submits[e.DAGNode]++
		case joblog.PostScriptTerminated:
			posts[e.DAGNode]++
		}
	}
	for _, n := range nodes {
		if runs[n] != 1 || submits[n] != 1 || posts[n] != 1 {
			t.Errorf("node %s: job ran %d times, submitted %d times, POST finished %d times; want each once", n, runs[n], submits[n], posts[n])
		}
	}
	out, _ := os.ReadFile(dagPath + ".dagman.out")
	if got := strings.Count(string(out), "running in recovery mode"); got != 2 {
		t.Errorf("dagman.out shows %d recoveries, want 2", got)
	}
	if _, err := os.Stat(dagPath + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock file is left after the DAG finished (%v)", err)
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/joblog"
)

// dagFiles writes a diamond DAG into h's directory: A, then B and C (VARS
// part), then D; a PRE script on A and a POST script on D that record
// themselves in scripts.log; each node job prints its node and part and
// then sleeps nap seconds. The DAG reads its nodes log every second.
func dagFiles(t *testing.T, h *hostile, name string, nap int) string {
	t.Helper()
	writeFile(t, filepath.Join(h.dir, "node.sh"), "#!/bin/sh\necho \"node $1 part $2\"\nsleep $3\n", 0o755)
	writeFile(t, filepath.Join(h.dir, "script.sh"), "#!/bin/sh\necho \"$*\" >> scripts.log\n", 0o755)
	writeFile(t, filepath.Join(h.dir, "node.sub"), fmt.Sprintf(
		"executable = node.sh\narguments = $(JOB) $(part) %d\noutput = $(JOB).out\nqueue\n", nap), 0o644)
	writeFile(t, filepath.Join(h.dir, "dagman.config"), "DAGMAN_USER_LOG_SCAN_INTERVAL = 1\n", 0o644)
	dag := filepath.Join(h.dir, name)
	writeFile(t, dag, `CONFIG dagman.config
JOB A node.sub
JOB B node.sub
JOB C node.sub
JOB D node.sub
VARS A part="0"
VARS B part="1"
VARS C part="2"
VARS D part="3"
PARENT A CHILD B C
PARENT B C CHILD D
SCRIPT PRE A script.sh pre $JOB
SCRIPT POST D script.sh post $JOB $RETURN
`, 0o644)
	return dag
}

// submitDag submits dag as user and returns the DAG job's cluster.
func submitDag(t *testing.T, h *hostile, user, dag string) int {
	t.Helper()
	out, code := h.tool(t, user, "submit-dag", dag)
	m := regexp.MustCompile(`(\d+) job\(s\) submitted to cluster (\d+)\.`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("submit-dag: exit %d: %s", code, out)
	}
	c, _ := strconv.Atoi(m[2])
	return c
}

// nodeEvents reads a DAG's nodes log and returns, per node, the types of
// its jobs' events in order, and the order in which nodes were submitted
// and ended.
func nodeEvents(t *testing.T, dag string) (byNode map[string][]joblog.Type, submits, ends []string) {
	t.Helper()
	f, err := os.Open(dag + ".nodes.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	byNode = map[string][]joblog.Type{}
	nodeOf := map[int]string{}
	for _, e := range events {
		if e.Type == joblog.Submit {
			if e.DAGNode == "" {
				t.Fatalf("submit event of job %d.%d names no DAG node", e.Cluster, e.Proc)
			}
			nodeOf[e.Cluster] = e.DAGNode
			submits = append(submits, e.DAGNode)
		}
		n := nodeOf[e.Cluster]
		byNode[n] = append(byNode[n], e.Type)
		if e.Type == joblog.Terminated {
			ends = append(ends, n)
		}
	}
	return byNode, submits, ends
}

// checkDiamond checks that every node of the diamond was submitted and
// ended exactly once, in dependency order.
func checkDiamond(t *testing.T, dag string) {
	t.Helper()
	byNode, submits, ends := nodeEvents(t, dag)
	for _, n := range []string{"A", "B", "C", "D"} {
		var subs, terms int
		for _, ty := range byNode[n] {
			subs += map[bool]int{true: 1}[ty == joblog.Submit]
			terms += map[bool]int{true: 1}[ty == joblog.Terminated]
		}
		if subs != 1 || terms != 1 {
			t.Errorf("node %s: %d submit and %d terminated events, want one each: %v", n, subs, terms, byNode[n])
		}
	}
	pos := func(list []string, n string) int { return slices.Index(list, n) }
	for _, edge := range [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}} {
		if pos(ends, edge[0]) < 0 || pos(submits, edge[1]) < 0 || !(pos(ends, edge[0]) < pos(submits, edge[1])) {
			t.Errorf("%s was submitted before its parent %s ended: submits %v, ends %v", edge[1], edge[0], submits, ends)
		}
	}
}

// TestSubmitDagDiamond: a user submits a diamond DAG with PRE and POST
// scripts and VARS to a real pool; the agent runs harrier dagman as a
// scheduler universe job of that user, whose nodes run in dependency order
// and exactly once, each marked with its node and its DAG (q -dag shows
// them under the DAG); the DAG's job leaves the queue with exit 0.
func TestSubmitDagDiamond(t *testing.T) {
	h := newUsersPool(t)
	alice := newUser(t).Username
	dag := dagFiles(t, h, "diamond.dag", 3)
	cluster := submitDag(t, h, alice, dag)
	id := fmt.Sprintf("%d.0", cluster)

	// While a node runs, q -dag shows it under the DAG's job.
	under := regexp.MustCompile(fmt.Sprintf(`(?m)^ %d\.0 +%s .*\n +\d+\.0 +\|-[ABCD] `, cluster, alice))
	var view string
	eventually(t, 90*time.Second, "q -dag to show a node under its DAG", func() bool {
		out, code := h.tool(t, alice, "q", "-dag")
		view = out
		return code == 0 && under.MatchString(out)
	})
	if dagJob := h.jobs(t, "q", id); len(dagJob) != 1 || dagJob[0]["JobUniverse"] != 7.0 || dagJob[0]["Owner"] != alice {
		t.Fatalf("the DAG's job: %v", dagJob)
	}
	eventually(t, 180*time.Second, "the DAG to finish", func() bool { return h.jobStatus(t, id) == 0 })
	hist := h.jobs(t, "history", id)
	if len(hist) != 1 || hist[0]["JobStatus"] != 4.0 || hist[0]["ExitCode"] != 0.0 {
		t.Fatalf("the DAG's job in history: %v\nq -dag had shown:\n%s", hist, view)
	}
	checkDiamond(t, dag)
	for _, n := range []string{"A", "B", "C", "D"} {
		part := map[string]string{"A": "0", "B": "1", "C": "2", "D": "3"}[n]
		if got := mustRead(t, filepath.Join(h.dir, n+".out")); got != "node "+n+" part "+part+"\n" {
			t.Errorf("node %s printed %q", n, got)
		}
	}
	if got := mustRead(t, filepath.Join(h.dir, "scripts.log")); got != "pre A\npost D 0\n" {
		t.Errorf("scripts.log: %q", got)
	}
	nodes := h.jobs(t, "history", "-constraint", fmt.Sprintf("DAGManJobId == %d", cluster))
	if len(nodes) != 4 {
		t.Errorf("%d node jobs in history with DAGManJobId %d, want 4", len(nodes), cluster)
	}
	for _, n := range nodes {
		if n["Owner"] != alice {
			t.Errorf("node job %v owned by %v", n["DAGNodeName"], n["Owner"])
		}
	}
	if out := mustRead(t, dag+".dagman.out"); !strings.Contains(out, "EXITING WITH STATUS 0") {
		t.Errorf("dagman.out does not end with success:\n%s", out)
	}
}

// TestSubmitDagRecoversAndIsRemoved: harrier dagman killed with SIGKILL
// while nodes run is started again by the agent; then the agent is killed
// with SIGKILL, and once restarted ends the old harrier dagman and starts
// it again; each time it recovers from the nodes log, and every node
// completes exactly once. A second DAG, whose
// node runs long, another user may not remove; its owner removes it with
// harrier rm, which removes its running node and writes a rescue DAG.
func TestSubmitDagRecoversAndIsRemoved(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	dag := dagFiles(t, h, "diamond.dag", 4)
	cluster := submitDag(t, h, alice, dag)
	id := fmt.Sprintf("%d.0", cluster)

	// Kill it once B and C are queued (A's job has ended): the log's
	// third submit event.
	eventually(t, 120*time.Second, "nodes B and C to be queued", func() bool {
		log, _ := os.ReadFile(dag + ".nodes.log")
		return len(regexp.MustCompile(`(?m)^000 \(`).FindAllIndex(log, -1)) >= 3
	})
	pidOf := func() int {
		ads := h.jobs(t, "q", id)
		if len(ads) == 0 || ads[0]["JobStatus"] != 2.0 {
			return 0
		}
		pid, _ := ads[0]["LocalJobPid"].(float64)
		return int(pid)
	}
	pid := pidOf()
	if pid == 0 {
		t.Fatal("the DAG's job does not run")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill harrier dagman (pid %d): %v", pid, err)
	}
	// Started again, it is killed again with the agent: the restarted
	// agent ends the process its predecessor left and starts the DAG anew.
	var again int
	eventually(t, 60*time.Second, "the agent to start harrier dagman again", func() bool {
		again = pidOf()
		return again != 0 && again != pid
	})
	h.restartAgent(t)
	eventually(t, 60*time.Second, "the restarted agent to end the DAG's old process", func() bool { return !alive(again) })
	eventually(t, 240*time.Second, "the DAG to finish", func() bool { return h.jobStatus(t, id) == 0 })
	hist := h.jobs(t, "history", id)
	if len(hist) != 1 || hist[0]["ExitCode"] != 0.0 || hist[0]["NumJobStarts"].(float64) < 3 {
		t.Fatalf("the DAG's job in history (want exit 0 after three starts): %v", hist)
	}
	checkDiamond(t, dag)
	if out := mustRead(t, dag+".dagman.out"); !strings.Contains(out, "EXITING WITH STATUS 0") {
		t.Errorf("dagman.out does not end with success:\n%s", out)
	}

	long := filepath.Join(h.dir, "long.dag")
	writeFile(t, filepath.Join(h.dir, "long.sub"), "executable = /bin/sleep\narguments = 600\nqueue\n", 0o644)
	writeFile(t, long, "CONFIG dagman.config\nJOB L long.sub\nJOB M long.sub\nPARENT L CHILD M\n", 0o644)
	cluster = submitDag(t, h, alice, long)
	id = fmt.Sprintf("%d.0", cluster)
	var node string
	eventually(t, 120*time.Second, "node L to run", func() bool {
		nodes := h.jobs(t, "q", "-constraint", fmt.Sprintf("DAGManJobId == %d && JobStatus == 2", cluster))
		if len(nodes) == 1 {
			node = fmt.Sprintf("%v.0", nodes[0]["ClusterId"])
		}
		return node != ""
	})
	if out, code := h.tool(t, bob, "rm", id); code == 0 {
		t.Fatalf("another user removed the DAG: %s", out)
	}
	if h.jobStatus(t, id) != 2 || h.jobStatus(t, node) != 2 {
		t.Fatalf("after another user's rm the DAG or its node no longer runs")
	}
	if out, code := h.tool(t, alice, "rm", id); code != 0 {
		t.Fatalf("rm of the DAG: exit %d: %s", code, out)
	}
	eventually(t, 60*time.Second, "the DAG and its node to leave the queue", func() bool {
		return h.jobStatus(t, id) == 0 && h.jobStatus(t, node) == 0
	})
	if hist := h.jobs(t, "history", node); len(hist) != 1 || hist[0]["JobStatus"] != 3.0 {
		t.Errorf("the running node in history: %v", hist)
	}
	if hist := h.jobs(t, "history", id); len(hist) != 1 || hist[0]["JobStatus"] != 3.0 {
		t.Errorf("the DAG's job in history: %v", hist)
	}
	rescue := mustRead(t, long+".rescue001")
	if strings.Contains(rescue, "DONE L") || !strings.Contains(rescue, "L") {
		t.Errorf("rescue DAG after the removal:\n%s", rescue)
	}
}

// TestSubmitDagSubDAG: a DAG whose middle node is SUBDAG EXTERNAL runs
// the inner DAG as that node's job, a harrier dagman of its own whose
// nodes run in order; the outer DAG's next node waits for it, and both
// DAGs end with success.
func TestSubmitDagSubDAG(t *testing.T) {
	h := newUsersPool(t)
	alice := newUser(t).Username
	dagFiles(t, h, "unused.dag", 0)
	writeFile(t, filepath.Join(h.dir, "inner.dag"), "CONFIG dagman.config\nJOB X node.sub\nJOB Y node.sub\nVARS X part=\"x\"\nVARS Y part=\"y\"\nPARENT X CHILD Y\n", 0o644)
	outer := filepath.Join(h.dir, "outer.dag")
	writeFile(t, outer, "CONFIG dagman.config\nJOB A node.sub\nSUBDAG EXTERNAL S inner.dag\nJOB B node.sub\nVARS A part=\"a\"\nVARS B part=\"b\"\nPARENT A CHILD S\nPARENT S CHILD B\n", 0o644)
	cluster := submitDag(t, h, alice, outer)
	id := fmt.Sprintf("%d.0", cluster)
	eventually(t, 180*time.Second, "the outer DAG to finish", func() bool { return h.jobStatus(t, id) == 0 })
	if hist := h.jobs(t, "history", id); len(hist) != 1 || hist[0]["ExitCode"] != 0.0 {
		t.Fatalf("the outer DAG's job in history: %v", hist)
	}
	_, submits, ends := nodeEvents(t, outer)
	if want := []string{"A", "S", "B"}; !slices.Equal(submits, want) || !slices.Equal(ends, want) {
		t.Errorf("outer DAG: submitted %v, ended %v; want %v in order", submits, ends, want)
	}
	_, submits, ends = nodeEvents(t, filepath.Join(h.dir, "inner.dag"))
	if want := []string{"X", "Y"}; !slices.Equal(submits, want) || !slices.Equal(ends, want) {
		t.Errorf("inner DAG: submitted %v, ended %v; want %v in order", submits, ends, want)
	}
	for n, part := range map[string]string{"A": "a", "X": "x", "Y": "y", "B": "b"} {
		if got := mustRead(t, filepath.Join(h.dir, n+".out")); got != "node "+n+" part "+part+"\n" {
			t.Errorf("node %s printed %q", n, got)
		}
	}
}

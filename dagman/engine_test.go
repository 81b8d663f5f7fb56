package dagman

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// writeFiles creates files under dir; names ending in .sh are executable.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// jobFiles are a node job that records its run in runs.txt ("NODE WORD")
// and exits with the status in NODE.exit if there is one, and scripts
// that record their arguments in scripts.txt.
var jobFiles = map[string]string{
	"job.sub": "executable = /bin/sh\narguments = \"job.sh $(JOB) '$(word)'\"\nqueue\n",
	"job.sh": `#!/bin/sh
echo "$1 $2" >> runs.txt
if [ -f "$1.sleep" ]; then sleep "$(cat "$1.sleep")"; fi
if [ -f "$1.exit" ]; then exit "$(cat "$1.exit")"; fi
exit 0
`,
	"pre.sh":  "#!/bin/sh\necho \"pre $*\" >> scripts.txt\nexit 0\n",
	"post.sh": "#!/bin/sh\necho \"post $*\" >> scripts.txt\nexit 0\n",
}

func lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// ranNodes returns the nodes whose jobs wrote to runs.txt, in order.
func ranNodes(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	for _, l := range lines(t, path) {
		out = append(out, strings.Fields(l)[0])
	}
	return out
}

func readLog(t testing.TB, path string) []joblog.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// runDAG parses and runs the DAG file text in dir with a procPool.
func runDAG(t testing.TB, dir, text string, opts Options) Result {
	t.Helper()
	path := filepath.Join(dir, "test.dag")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(path + ".dagman.out")
			t.Logf("%s:\n%s", path+".dagman.out", out)
		}
	})
	if text != "" {
		writeFiles(t, dir, map[string]string{"test.dag": text})
	}
	dag, err := ParseFile(path, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, dag, newProcPool(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// order returns, per node, the index in the log of its first submit event
// and of its job's (last proc's) end.
func order(events []joblog.Event) (submitted, ended map[string]int) {
	submitted, ended = map[string]int{}, map[string]int{}
	node := map[int]string{}
	for i, e := range events {
		switch e.Type {
		case joblog.Submit:
			node[e.Cluster] = e.DAGNode
			if _, ok := submitted[e.DAGNode]; !ok {
				submitted[e.DAGNode] = i
			}
		case joblog.Terminated, joblog.Aborted:
			ended[node[e.Cluster]] = i
		}
	}
	return submitted, ended
}

// A diamond with PRE and POST scripts and VARS runs each node once, in
// dependency order, and its scripts see their macros.
func TestDiamond(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	res := runDAG(t, dir, `# a diamond
JOB A job.sub
JOB B job.sub
Job C job.sub
JOB D job.sub
VARS A word="alpha"
VARS B word="two words"
VARS C word="gamma" +DAGColour="\"green\""
VARS D word="$(JOB)-delta"
PARENT A CHILD B C
parent B C child D
SCRIPT PRE B pre.sh $JOB $RETRY $MAX_RETRIES
SCRIPT POST B post.sh $JOB $RETURN $PRE_SCRIPT_RETURN
SCRIPT POST D post.sh $JOB $RETURN $PRE_SCRIPT_RETURN $JOBID
NODE_STATUS_FILE status.txt
DOT dag.dot
`, Options{})
	if res.ExitCode != 0 || res.Status != DAGStatusOK || res.Done != 4 || res.Rescue != "" {
		t.Fatalf("result %+v, want 4 nodes done and exit 0", res)
	}
	runs := lines(t, filepath.Join(dir, "runs.txt"))
	if len(runs) != 4 || runs[0] != "A alpha" || runs[3] != "D D-delta" ||
		!slices.Contains(runs, "B two words") || !slices.Contains(runs, "C gamma") {
		t.Errorf("runs %q, want A alpha first, B two words and C gamma, D D-delta last", runs)
	}
	scripts := lines(t, filepath.Join(dir, "scripts.txt"))
	events := readLog(t, filepath.Join(dir, "test.dag.nodes.log"))
	_, ended := order(events)
	var dCluster int
	for _, e := range events {
		if e.Type == joblog.Submit && e.DAGNode == "D" {
			dCluster = e.Cluster
		}
	}
	want := []string{"pre B 0 0", "post B 0 0", "post D 0 -1 " + strconv.Itoa(dCluster) + ".0"}
	if !slices.Equal(scripts, want) {
		t.Errorf("scripts ran as %q, want %q", scripts, want)
	}
	submitted, _ := order(events)
	if !(ended["A"] < submitted["B"] && ended["A"] < submitted["C"] && ended["B"] < submitted["D"] && ended["C"] < submitted["D"]) {
		t.Errorf("the log's order breaks the dependencies: submitted %v, ended %v", submitted, ended)
	}
	posts := 0
	for _, e := range events {
		if e.Type == joblog.PostScriptTerminated {
			posts++
		}
	}
	if posts != 2 {
		t.Errorf("%d POST script events in the log, want 2", posts)
	}
	checkStatusFile(t, filepath.Join(dir, "status.txt"), map[string]Status{"A": StatusDone, "B": StatusDone, "C": StatusDone, "D": StatusDone})
	dot, err := os.ReadFile(filepath.Join(dir, "dag.dot"))
	if err != nil || !strings.Contains(string(dot), `"A" -> "B";`) || !strings.Contains(string(dot), `"C" -> "D";`) {
		t.Errorf("DOT file %q (%v), want the diamond's edges", dot, err)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "test.dag.dagman.out"))
	for _, want := range []string{"Submitting HTCondor Node A job(s)...", "Node D job completed", "All jobs Completed!", "EXITING WITH STATUS 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dagman.out lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "test.dag.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file is left after a finished run (%v)", err)
	}
}

// checkStatusFile reads the node status file as ClassAds and compares the
// nodes' states.
func checkStatusFile(t *testing.T, path string, want map[string]Status) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Status{}
	types := []string{}
	for chunk := range strings.SplitSeq(strings.TrimSuffix(string(b), "]\n"), "]\n") {
		ad, err := classad.Parse(chunk + "]")
		if err != nil {
			t.Fatalf("node status file: %v in %q", err, chunk)
		}
		typ, _ := ad.EvalString("Type")
		types = append(types, typ)
		if typ == "NodeStatus" {
			name, _ := ad.EvalString("Node")
			st, _ := ad.EvalInt("NodeStatus")
			got[name] = Status(st)
		}
	}
	if types[0] != "DagStatus" || types[len(types)-1] != "StatusEnd" {
		t.Errorf("node status file ads %v, want DagStatus first and StatusEnd last", types)
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("node status file: %s is %v, want %v", name, got[name], st)
		}
	}
}

// A node whose job fails twice succeeds on its third try with RETRY 2;
// UNLESS-EXIT stops retries at its value.
func TestRetryThirdTry(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{
		// Fails until its third run.
		"flaky.sub": "executable = /bin/sh\narguments = flaky.sh $(RETRY)\nqueue\n",
		"flaky.sh":  "#!/bin/sh\necho \"try $1\" >> flaky.txt\n[ $(wc -l < flaky.txt) -ge 3 ]\n",
		"never.sub": "executable = /bin/sh\narguments = \"-c 'echo run >> never.txt; exit 3'\"\nqueue\n",
		// A POST script that passes the job's result on.
		"pass.sh": "#!/bin/sh\necho \"post $*\" >> scripts.txt\nexit $3\n",
	})
	res := runDAG(t, dir, `JOB F flaky.sub
JOB N never.sub
JOB after job.sub
PARENT F CHILD after
RETRY F 2
RETRY N 5 UNLESS-EXIT 3
SCRIPT POST F pass.sh $JOB $RETRY $RETURN
`, Options{})
	if got := lines(t, filepath.Join(dir, "flaky.txt")); !slices.Equal(got, []string{"try 0", "try 1", "try 2"}) {
		t.Errorf("flaky node ran %q, want three tries numbered 0 to 2", got)
	}
	if got := lines(t, filepath.Join(dir, "scripts.txt")); !slices.Equal(got, []string{"post F 0 1", "post F 1 1", "post F 2 0"}) {
		t.Errorf("POST script saw %q", got)
	}
	if got := lines(t, filepath.Join(dir, "never.txt")); len(got) != 1 {
		t.Errorf("node N ran %d times, want once (UNLESS-EXIT 3)", len(got))
	}
	if res.Done != 2 || res.Failed != 1 || res.ExitCode != 1 {
		t.Errorf("result %+v, want F and after done, N failed, exit 1", res)
	}
}

// A failed node fails its descendants while an independent branch runs on;
// the rescue DAG marks what was done, and a second run of the same DAG
// file applies it and runs only the rest.
func TestRescueDAG(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{"C.exit": "4"})
	dagText := `JOB A job.sub
JOB B job.sub
JOB C job.sub
JOB D job.sub
JOB E job.sub
JOB X job.sub
JOB Y job.sub
PARENT A CHILD B C
PARENT C CHILD D
PARENT D CHILD E
PARENT X CHILD Y
NODE_STATUS_FILE status.txt
`
	res := runDAG(t, dir, dagText, Options{})
	if res.ExitCode != 1 || res.Status != DAGStatusNodeFailed || res.Done != 4 || res.Failed != 1 || res.Futile != 2 {
		t.Fatalf("result %+v, want A B X Y done, C failed, D E futile", res)
	}
	rescue := filepath.Join(dir, "test.dag.rescue001")
	if res.Rescue != rescue {
		t.Fatalf("rescue DAG %q, want %q", res.Rescue, rescue)
	}
	var done []string
	for _, l := range lines(t, rescue) {
		if d, ok := strings.CutPrefix(l, "DONE "); ok {
			done = append(done, d)
		}
	}
	if !slices.Equal(done, []string{"A", "B", "X", "Y"}) {
		t.Errorf("rescue DAG marks %q done, want A B X Y", done)
	}
	if b, _ := os.ReadFile(rescue); !strings.Contains(string(b), "#   C,<ENDLIST>") {
		t.Errorf("rescue DAG does not list C as failed:\n%s", b)
	}
	checkStatusFile(t, filepath.Join(dir, "status.txt"), map[string]Status{"C": StatusError, "D": StatusFutile, "Y": StatusDone})

	os.Remove(filepath.Join(dir, "C.exit"))
	os.Remove(filepath.Join(dir, "runs.txt"))
	res = runDAG(t, dir, "", Options{})
	if res.ExitCode != 0 || res.Done != 7 || res.Rescue != "" {
		t.Fatalf("rescue run: %+v, want all 7 done", res)
	}
	ran := ranNodes(t, filepath.Join(dir, "runs.txt"))
	if !slices.Equal(ran, []string{"C", "D", "E"}) {
		t.Errorf("the rescue run ran %q, want only C D E", ran)
	}
	if _, err := os.Stat(filepath.Join(dir, "test.dag.rescue002")); !os.IsNotExist(err) {
		t.Errorf("a successful rescue run wrote another rescue DAG (%v)", err)
	}
}

// CATEGORY MAXJOBS and -maxjobs hold the number of queued node jobs down,
// as the nodes log shows: never more jobs between their submit and their
// end than the throttle allows, and as many as it allows.
func TestThrottles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	var b strings.Builder
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5", "s6", "f1", "f2", "f3", "f4"} {
		b.WriteString("JOB " + n + " job.sub\n")
		writeFiles(t, dir, map[string]string{n + ".sleep": "0.3"})
	}
	b.WriteString("CATEGORY s1 slow\nCATEGORY s2 slow\nCATEGORY s3 slow\nCATEGORY s4 slow\nCATEGORY s5 slow\nCATEGORY s6 slow\nMAXJOBS slow 2\n")
	res := runDAG(t, dir, b.String(), Options{})
	if res.ExitCode != 0 || res.Done != 10 {
		t.Fatalf("result %+v", res)
	}
	peak := func(events []joblog.Event, in func(string) bool) int {
		node, cur, max := map[int]string{}, 0, 0
		for _, e := range events {
			switch e.Type {
			case joblog.Submit:
				node[e.Cluster] = e.DAGNode
				if in(e.DAGNode) {
					cur++
				}
			case joblog.Terminated:
				if in(node[e.Cluster]) {
					cur--
				}
			}
			max = maxInt(max, cur)
		}
		return max
	}
	events := readLog(t, filepath.Join(dir, "test.dag.nodes.log"))
	slow := func(n string) bool { return strings.HasPrefix(n, "s") }
	if p := peak(events, slow); p != 2 {
		t.Errorf("category slow peaked at %d queued jobs, want 2 (MAXJOBS slow 2)", p)
	}
	if p := peak(events, func(n string) bool { return !slow(n) }); p != 4 {
		t.Errorf("the uncategorised nodes peaked at %d queued jobs, want all 4 at once", p)
	}

	dir = t.TempDir()
	writeFiles(t, dir, jobFiles)
	b.Reset()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		b.WriteString("JOB " + n + " job.sub\n")
		writeFiles(t, dir, map[string]string{n + ".sleep": "0.2"})
	}
	runDAG(t, dir, b.String(), Options{MaxJobs: 3})
	events = readLog(t, filepath.Join(dir, "test.dag.nodes.log"))
	if p := peak(events, func(string) bool { return true }); p != 3 {
		t.Errorf("-maxjobs 3: %d jobs queued at once, want 3", p)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// ABORT-DAG-ON stops the DAG with its RETURN value; the FINAL node still
// runs and sees the abort in $DAG_STATUS; PRE_SKIP skips a job; NOOP
// nodes submit nothing; PRIORITY orders ready nodes.
func TestAbortFinalPreSkipNoop(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{
		"B.exit":  "3",
		"skip.sh": "#!/bin/sh\nexit 2\n",
		// The FINAL node's job sees the DAG's status as macros.
		"final.sub": "executable = /bin/sh\narguments = \"job.sh $(JOB) status=$(DAG_STATUS)/$(FAILED_COUNT)\"\nqueue\n",
	})
	res := runDAG(t, dir, `JOB A job.sub
JOB skipped job.sub
JOB noop job.sub NOOP
JOB B job.sub
JOB C job.sub
PARENT A CHILD B
PARENT B CHILD C
SCRIPT PRE skipped skip.sh
PRE_SKIP skipped 2
SCRIPT POST noop post.sh $JOB $RETURN
ABORT-DAG-ON B 3 RETURN 7
PRIORITY skipped 10
FINAL F final.sub
SCRIPT PRE F pre.sh $JOB $DAG_STATUS $FAILED_COUNT
`, Options{MaxJobs: 1})
	if res.ExitCode != 7 || res.Status != DAGStatusAbort {
		t.Errorf("result %+v, want an abort with exit 7", res)
	}
	ran := lines(t, filepath.Join(dir, "runs.txt"))
	if !slices.Equal(ran, []string{"A ", "B ", "F status=3/1"}) {
		t.Errorf("jobs ran %q, want A B and the FINAL node F seeing DAG_STATUS 3 and FAILED_COUNT 1 (C aborted, skipped skipped, noop a NOOP)", ran)
	}
	scripts := lines(t, filepath.Join(dir, "scripts.txt"))
	if !slices.Contains(scripts, "post noop 0") || !slices.Contains(scripts, "pre F 3 1") {
		t.Errorf("scripts ran %q, want noop's POST with $RETURN 0 and F's PRE with $DAG_STATUS 3 and one failure", scripts)
	}
	if res.Rescue == "" {
		t.Error("an aborted DAG wrote no rescue DAG")
	}
}

// A DAG another process runs is refused.
func TestLockHeld(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"test.dag": "JOB A job.sub\n"})
	dag, err := ParseFile(filepath.Join(dir, "test.dag"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), holdLockEnv+"="+filepath.Join(dir, "test.dag.lock"))
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		holder.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the lock holder said %q, %v", line, err)
	}
	if _, err := Run(context.Background(), dag, newProcPool(t), Options{}); !errors.Is(err, ErrRunning) {
		t.Errorf("Run while another process holds the lock: %v, want ErrRunning", err)
	}
}

// holdLockEnv makes the test binary take a DAG's lock, say so, and hold it
// until its standard input closes.
const holdLockEnv = "DAGMAN_TEST_HOLD_LOCK"

func holdLock(path string) int {
	lk, _, err := lock(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := lk.mark(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	lk.release(true)
	return 0
}

// A SUBDAG EXTERNAL node runs its DAG as its job: the node succeeds or
// fails with that DAG.
func TestSubDAG(t *testing.T) {
	for _, fail := range []bool{false, true} {
		dir := t.TempDir()
		writeFiles(t, dir, jobFiles)
		for name, text := range jobFiles {
			writeFiles(t, dir, map[string]string{"inner/" + name: text})
		}
		writeFiles(t, dir, map[string]string{"inner/inner.dag": "JOB X job.sub\nJOB Y job.sub\nPARENT X CHILD Y\n"})
		if fail {
			writeFiles(t, dir, map[string]string{"inner/Y.exit": "1"})
		}
		res := runDAG(t, dir, "JOB A job.sub\nSUBDAG EXTERNAL S inner.dag DIR inner\nJOB B job.sub\nPARENT A CHILD S\nPARENT S CHILD B\n", Options{})
		inner := ranNodes(t, filepath.Join(dir, "inner", "runs.txt"))
		if !slices.Equal(inner, []string{"X", "Y"}) {
			t.Errorf("the sub-DAG ran %q, want X then Y", inner)
		}
		if fail {
			if res.ExitCode != 1 || res.Failed != 1 || res.Futile != 1 {
				t.Errorf("a failed sub-DAG: %+v, want S failed and B futile", res)
			}
			continue
		}
		if outer := ranNodes(t, filepath.Join(dir, "runs.txt")); res.ExitCode != 0 || !slices.Equal(outer, []string{"A", "B"}) {
			t.Errorf("result %+v, outer jobs %q: want all done, A then B", res, outer)
		}
	}
}

// Removing the DAG (ErrRemoved) removes its running jobs and writes a
// rescue DAG; the DAG exits with 2.
func TestRemove(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{"test.dag": "JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nPARENT A CHILD C\n", "A.sleep": "60"})
	dag, err := ParseFile(filepath.Join(dir, "test.dag"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "test.dag.nodes.log")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		// Remove once A runs and B is done.
		for {
			f, _ := os.Open(logPath)
			events, _ := joblog.Read(f)
			f.Close()
			_, ended := order(events)
			if _, ok := ended["B"]; ok && slices.ContainsFunc(events, func(e joblog.Event) bool { return e.Type == joblog.Execute && e.Cluster == 1 }) {
				cancel(ErrRemoved)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, dag, newProcPool(t), Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != DAGStatusRemoved || res.ExitCode != 2 || res.Rescue == "" {
		t.Fatalf("result %+v, want removed, exit 2, a rescue DAG", res)
	}
	if b, _ := os.ReadFile(res.Rescue); !strings.Contains(string(b), "\nDONE B\n") || strings.Contains(string(b), "DONE A") {
		t.Errorf("rescue DAG:\n%s\nwant B alone done", b)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if slices.ContainsFunc(readLog(t, logPath), func(e joblog.Event) bool { return e.Type == joblog.Aborted && e.Cluster == 1 }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A's job was not removed")
		}
	}
}

// -maxpre holds the PRE scripts running at once down, -maxidle the idle
// jobs; DEFER runs a script again later without failing its node.
func TestScriptThrottlesAndDefer(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{
		"slowpre.sh": "#!/bin/sh\necho \"start $1\" >> pres.txt\nsleep 0.2\necho \"end $1\" >> pres.txt\n",
		"defer.sh":   "#!/bin/sh\necho \"defer $1\" >> defer.txt\nif [ ! -f deferred ]; then touch deferred; exit 4; fi\n",
	})
	var b strings.Builder
	for _, n := range []string{"p1", "p2", "p3", "p4", "p5"} {
		fmt.Fprintf(&b, "JOB %s job.sub\nSCRIPT PRE %s slowpre.sh $JOB\n", n, n)
		writeFiles(t, dir, map[string]string{n + ".sleep": "0.2"})
	}
	b.WriteString("JOB D job.sub\nSCRIPT DEFER 4 1 PRE D defer.sh $JOB\n")
	res := runDAG(t, dir, b.String(), Options{MaxPre: 2, MaxIdle: 1})
	if res.ExitCode != 0 || res.Done != 6 {
		t.Fatalf("result %+v", res)
	}
	cur, peak := 0, 0
	for _, l := range lines(t, filepath.Join(dir, "pres.txt")) {
		if strings.HasPrefix(l, "start") {
			cur++
		} else {
			cur--
		}
		peak = maxInt(peak, cur)
	}
	if peak != 2 {
		t.Errorf("%d PRE scripts ran at once, want 2 (-maxpre 2)", peak)
	}
	if got := lines(t, filepath.Join(dir, "defer.txt")); len(got) != 2 {
		t.Errorf("the deferred PRE script ran %q, want twice", got)
	}
	// -maxidle 1: no job is submitted while another has not started.
	idle := map[int]bool{}
	for _, e := range readLog(t, filepath.Join(dir, "test.dag.nodes.log")) {
		switch e.Type {
		case joblog.Submit:
			if len(idle) > 0 {
				t.Errorf("cluster %d submitted while %v were idle (-maxidle 1)", e.Cluster, idle)
			}
			idle[e.Cluster] = true
		case joblog.Execute, joblog.Terminated:
			delete(idle, e.Cluster)
		}
	}
}

// Ready nodes are submitted highest PRIORITY first.
func TestPriority(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "test.dag")
	writeFiles(t, dir, map[string]string{"test.dag": "JOB lo x\nJOB hi x\nJOB mid x\nJOB neg x\nPRIORITY hi 5\nPRIORITY mid 2\nPRIORITY neg -1\n"})
	dag, err := ParseFile(path, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), dag, newInstantPool(), Options{MaxJobs: 1}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readLog(t, path+".nodes.log") {
		if e.Type == joblog.Submit {
			got = append(got, e.DAGNode)
		}
	}
	if want := []string{"hi", "mid", "lo", "neg"}; !slices.Equal(got, want) {
		t.Errorf("submitted in the order %q, want %q", got, want)
	}
}

// A SERVICE node runs beside the DAG without holding it up or deciding its
// result; its job is removed when the DAG ends.
func TestService(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	writeFiles(t, dir, map[string]string{"W.sleep": "60", "W.exit": "1"})
	res := runDAG(t, dir, "JOB A job.sub\nJOB B job.sub\nPARENT A CHILD B\nSERVICE W job.sub\n", Options{})
	if res.ExitCode != 0 || res.Done != 2 {
		t.Fatalf("result %+v, want A and B done, exit 0", res)
	}
	logPath := filepath.Join(dir, "test.dag.nodes.log")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var w int
		removed := false
		for _, e := range readLog(t, logPath) {
			if e.Type == joblog.Submit && e.DAGNode == "W" {
				w = e.Cluster
			}
			removed = removed || e.Type == joblog.Aborted && e.Cluster == w
		}
		if removed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the SERVICE node's job was not removed at the DAG's end")
		}
	}
}

// SPLICE with DIR, JOB DIR and INCLUDE run their nodes in their
// directories; CONFIG's DAGMAN_MAX_JOBS_SUBMITTED throttles; DOT with
// UPDATE, DONT-OVERWRITE and INCLUDE writes numbered files, the last with
// every node done.
func TestSpliceDirConfigDot(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"", "sp/", "j/"} {
		for name, text := range jobFiles {
			writeFiles(t, dir, map[string]string{d + name: text})
		}
	}
	writeFiles(t, dir, map[string]string{
		"sp/part.dag": "JOB X job.sub\nJOB Y job.sub\nPARENT X CHILD Y\nSCRIPT POST Y post.sh $JOB\n",
		"more.dag":    "JOB M job.sub DIR j\n",
		"dag.config":  "DAGMAN_MAX_JOBS_SUBMITTED = 1\n",
		"extra.dot":   "    // included\n",
	})
	res := runDAG(t, dir, `CONFIG dag.config
JOB A job.sub
SPLICE S part.dag DIR sp
INCLUDE more.dag
PARENT A CHILD S
PARENT S CHILD M
DOT dag.dot UPDATE DONT-OVERWRITE INCLUDE extra.dot
`, Options{})
	if res.ExitCode != 0 || res.Done != 4 {
		t.Fatalf("result %+v", res)
	}
	if got := ranNodes(t, filepath.Join(dir, "sp", "runs.txt")); !slices.Equal(got, []string{"S+X", "S+Y"}) {
		t.Errorf("the splice's directory saw %q, want S+X then S+Y", got)
	}
	if got := lines(t, filepath.Join(dir, "sp", "scripts.txt")); !slices.Equal(got, []string{"post S+Y"}) {
		t.Errorf("the splice's POST script ran as %q", got)
	}
	if got := ranNodes(t, filepath.Join(dir, "j", "runs.txt")); !slices.Equal(got, []string{"M"}) {
		t.Errorf("DIR j saw %q, want M", got)
	}
	if got := ranNodes(t, filepath.Join(dir, "runs.txt")); !slices.Equal(got, []string{"A"}) {
		t.Errorf("the DAG's directory saw %q, want A", got)
	}
	queued := 0
	for _, e := range readLog(t, filepath.Join(dir, "test.dag.nodes.log")) {
		switch e.Type {
		case joblog.Submit:
			if queued++; queued > 1 {
				t.Errorf("cluster %d submitted while another was queued (CONFIG's DAGMAN_MAX_JOBS_SUBMITTED = 1)", e.Cluster)
			}
		case joblog.Terminated:
			queued--
		}
	}
	first, err := os.ReadFile(filepath.Join(dir, "dag.dot.0"))
	if err != nil || !strings.Contains(string(first), "// included") || !strings.Contains(string(first), `"S+Y" -> "M";`) {
		t.Errorf("first DOT file %q (%v), want the included text and the edges", first, err)
	}
	dots, _ := filepath.Glob(filepath.Join(dir, "dag.dot.*"))
	last, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("dag.dot.%d", len(dots)-1)))
	if len(dots) < 2 || strings.Count(string(last), "DONE") != 4 {
		t.Errorf("%d DOT files, the last:\n%s\nwant at least 2, the last with 4 nodes DONE", len(dots), last)
	}
}

// batchPool is an instantPool that takes batches, recording each one's
// nodes, and refuses the first try of node "bad".
type batchPool struct {
	*instantPool
	batches [][]string
}

func (p *batchPool) SubmitBatch(ctx context.Context, jobs []Job) []Submitted {
	res := make([]Submitted, len(jobs))
	var names []string
	for k, j := range jobs {
		names = append(names, j.Node)
		if j.Node == "bad" && j.Retry == 0 {
			res[k].Err = errors.New("refused")
			continue
		}
		res[k].Cluster, res[k].Procs, res[k].Err = p.Submit(ctx, j)
	}
	p.batches = append(p.batches, names)
	return res
}

// A BatchSubmitter gets the ready nodes of a cycle in one batch, within the
// throttles (CATEGORY MAXJOBS counts the nodes of the batch), and a node it
// could not queue fails its try alone.
func TestBatchSubmission(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "test.dag")
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "JOB n%d x\nJOB c%d x\nCATEGORY c%d capped\n", i, i, i)
	}
	b.WriteString("MAXJOBS capped 3\nJOB bad x\nRETRY bad 1\nJOB after x\nPARENT bad CHILD after\n")
	writeFiles(t, dir, map[string]string{"test.dag": b.String()})
	dag, err := ParseFile(path, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := &batchPool{instantPool: newInstantPool()}
	res, err := Run(context.Background(), dag, pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Done != 42 {
		t.Fatalf("result %+v, want all 42 nodes done", res)
	}
	if len(pool.batches) == 0 || len(pool.batches[0]) < 20 {
		t.Fatalf("batches %q: the first cycle's ready nodes were not submitted together", pool.batches)
	}
	tries := 0
	for _, batch := range pool.batches {
		capped := 0
		for _, n := range batch {
			if strings.HasPrefix(n, "c") {
				capped++
			}
			if n == "bad" {
				tries++
			}
		}
		if capped > 3 {
			t.Errorf("a batch of %d nodes of category capped (MAXJOBS capped 3): %q", capped, batch)
		}
	}
	if tries != 2 {
		t.Errorf("node bad submitted %d times, want 2 (refused, then retried)", tries)
	}
}

// The engine reads the nodes log when it is written, not only at its poll
// interval: a chain whose every link waits on the log ends though the
// interval is an hour.
func TestLogWrittenWakes(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, jobFiles)
	res := runDAG(t, dir, "JOB a job.sub\nJOB b job.sub\nJOB c job.sub\nPARENT a CHILD b\nPARENT b CHILD c\n", Options{PollInterval: time.Hour})
	if res.ExitCode != 0 || res.Done != 3 {
		t.Fatalf("result %+v", res)
	}
	if got := ranNodes(t, filepath.Join(dir, "runs.txt")); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("runs %q, want a, b, c in order", got)
	}
}

// Nodes ready for submission wait for a fuller batch only while the pool
// has plenty of the DAG's jobs idle, and not for ever.
func TestSubmissionWaitsForABatch(t *testing.T) {
	e := &engine{}
	e.idle = idleReserve + 5 // with the 5 held
	if !e.wait(5) {
		t.Errorf("5 nodes with %d jobs idle besides submitted at once", idleReserve)
	}
	e.waitingSince = time.Now().Add(-maxWait)
	if e.wait(5) {
		t.Errorf("5 nodes still wait after %v", maxWait)
	}
	e.waitingSince = time.Time{}
	e.idle = idleReserve - 1 + 5
	if e.wait(5) {
		t.Errorf("5 nodes wait with only %d jobs idle", idleReserve-1)
	}
	e.idle = 10 * idleReserve
	if e.wait(fullBatch) {
		t.Errorf("a full batch of %d waits", fullBatch)
	}
}

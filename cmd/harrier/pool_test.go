package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testPool is a personal pool started with harrier pool up for one test.
type testPool struct {
	dir string
	env []string
}

func startPool(t testing.TB, startds int) *testPool {
	t.Helper()
	return startPoolWith(t, startds, "")
}

// startPoolWith starts a personal pool whose configuration has extra lines
// appended before the daemons start.
func startPoolWith(t testing.TB, startds int, extra string) *testPool {
	t.Helper()
	return startPoolFrom(t, harrierBin(t), startds, extra)
}

// startPoolFrom is startPoolWith with the binary bin as harrier: its
// daemons, shadows and starters run bin. upArgs are added to pool up's.
func startPoolFrom(t testing.TB, bin string, startds int, extra string, upArgs ...string) *testPool {
	t.Helper()
	needPool(t)
	base := t.TempDir()
	// Other users (the permission tests) must reach the agent's socket.
	for d := base; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	p := &testPool{dir: filepath.Join(base, "pool")}
	p.env = []string{"HARRIER_POOL=" + p.dir}
	if extra != "" {
		if err := createPool(p.dir); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(p.dir, poolConfigName), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("\n" + extra + "\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	out, code := harrierFrom(t, bin, nil, append([]string{"pool", "up", "--dir", p.dir, "--startds", strconv.Itoa(startds), "--detach"}, upArgs...)...)
	if code != 0 || !strings.Contains(out, "Pool up") {
		t.Fatalf("pool up: exit %d: %s", code, out)
	}
	t.Cleanup(func() {
		out, code := harrier(t, nil, "pool", "down", "--dir", p.dir)
		if code != 0 {
			t.Errorf("pool down: exit %d: %s", code, out)
		}
		freeFUSEMounts(t, p.dir)
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(p.dir, "log", "*.log"))
			starters, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "starter.*.log"))
			logs = append(logs, starters...)
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("---- %s\n%s", l, b)
			}
		}
	})
	return p
}

func (p *testPool) harrier(t testing.TB, args ...string) (string, int) {
	t.Helper()
	return harrier(t, p.env, args...)
}

func (p *testPool) must(t testing.TB, args ...string) string {
	t.Helper()
	return mustHarrier(t, p.env, args...)
}

// jobs returns the queue (or history) as decoded JSON ads.
func (p *testPool) jobs(t testing.TB, cmd string, ids ...string) []map[string]any {
	t.Helper()
	out := p.must(t, append([]string{cmd, "-json"}, ids...)...)
	var ads []map[string]any
	if err := json.Unmarshal([]byte(out), &ads); err != nil {
		t.Fatalf("harrier %s -json: %v\n%s", cmd, err, out)
	}
	return ads
}

// jobStatus returns a job's JobStatus in the queue, or 0 if it is not there.
func (p *testPool) jobStatus(t testing.TB, id string) int {
	ads := p.jobs(t, "q", id)
	if len(ads) == 0 {
		return 0
	}
	st, _ := ads[0]["JobStatus"].(float64)
	return int(st)
}

// submit writes a submit file into dir and submits it, returning the cluster.
func (p *testPool) submit(t *testing.T, dir, name, desc string) int {
	t.Helper()
	path := filepath.Join(dir, name)
	writeFile(t, path, desc, 0o644)
	out := p.must(t, "submit", path)
	var n, cluster int
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &cluster); err != nil {
		t.Fatalf("submit said %q: %v", out, err)
	}
	return cluster
}

// copyExample copies an example directory so the test's output stays out of
// the source tree.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join("..", "..", "examples", name)
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v: %s", err, out)
	}
	return dst
}

func TestPersonalPoolRunsHello(t *testing.T) {
	p := startPool(t, 2)
	ex := copyExample(t, "hello")
	out := p.must(t, "submit", filepath.Join(ex, "hello.sub"))
	if out != "1 job(s) submitted to cluster 1.\n" {
		t.Fatalf("submit said %q", out)
	}
	if out, code := p.harrier(t, "wait", "--timeout", "60", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	stdout, err := os.ReadFile(filepath.Join(ex, "hello.out"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Hello, World, from", "lines: 5  words: 5", "sorted:\napple\nbanana\ncherry\nfig\npear\n"} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("hello.out lacks %q:\n%s", want, stdout)
		}
	}
	if stderr, _ := os.ReadFile(filepath.Join(ex, "hello.err")); string(stderr) != "hello.sh finished\n" {
		t.Errorf("hello.err = %q", stderr)
	}
	log, err := os.ReadFile(filepath.Join(ex, "hello.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"000 (001.000.000)", "Job submitted from host", "001 (001.000.000)", "Job executing on host",
		"005 (001.000.000)", "Job terminated.", "(1) Normal termination (return value 0)", "\n...\n"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("hello.log lacks %q:\n%s", want, log)
		}
	}
	hist := p.jobs(t, "history")
	if len(hist) != 1 || hist[0]["JobStatus"] != 4.0 || hist[0]["ExitCode"] != 0.0 {
		t.Errorf("history = %v", hist)
	}
	if wall, ok := hist[0]["RemoteWallClockTime"].(float64); !ok || wall < 0 {
		t.Errorf("history RemoteWallClockTime = %v, want the run's seconds", hist[0]["RemoteWallClockTime"])
	}
	// Options may follow -af's attributes, as with condor_history.
	if out := p.must(t, "history", "-af", "ClusterId", "ExitCode", "-constraint", "ClusterId == 1"); out != "1 0\n" {
		t.Errorf("history -af ClusterId ExitCode -constraint ...: %q", out)
	}
	if q := p.jobs(t, "q"); len(q) != 0 {
		t.Errorf("queue not empty after completion: %v", q)
	}
	machines := p.jobs(t, "status")
	if len(machines) != 2 {
		t.Errorf("status shows %d machines, want 2", len(machines))
	}
	for _, m := range machines {
		for _, attr := range []string{"Arch", "OpSys", "Cpus", "Memory", "Disk", "LoadAvg", "KeyboardIdle", "Start"} {
			if _, ok := m[attr]; !ok {
				t.Errorf("machine ad %v lacks %s", m["Name"], attr)
			}
		}
	}
	table := p.must(t, "status")
	if !regexp.MustCompile(`LINUX +X86_64 +Unclaimed +Idle`).MatchString(table) {
		t.Errorf("status table:\n%s", table)
	}
}

func TestHoldReleaseRemove(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	c := p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 300\nlog = sleep.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 30*time.Second, "the job to run", func() bool { return p.jobStatus(t, id) == 2 })

	p.must(t, "hold", id)
	if st := p.jobStatus(t, id); st != 5 {
		t.Fatalf("after hold JobStatus = %d, want 5", st)
	}
	q := p.jobs(t, "q", id)
	if r, _ := q[0]["HoldReason"].(string); !strings.Contains(r, "harrier hold") {
		t.Errorf("HoldReason = %q", r)
	}
	// The held job's process is gone: the slot becomes free again.
	eventually(t, 30*time.Second, "the slot to be released", func() bool {
		return strings.Contains(p.must(t, "status", "-af", "State"), "Unclaimed")
	})

	// Another user may not touch the job.
	out, code := harrierAs(t, p.env, "nobody", "rm", id)
	if code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("rm by nobody: exit %d: %s", code, out)
	}
	if st := p.jobStatus(t, id); st != 5 {
		t.Errorf("job changed after a refused rm: JobStatus %d", st)
	}

	p.must(t, "release", id)
	eventually(t, 30*time.Second, "the released job to run again", func() bool { return p.jobStatus(t, id) == 2 })

	p.must(t, "rm", id)
	eventually(t, 30*time.Second, "the removed job to leave the queue", func() bool { return p.jobStatus(t, id) == 0 })
	if out, code := p.harrier(t, "wait", "--timeout", "5", id); code != 1 {
		t.Errorf("wait on a removed job: exit %d (%s), want 1", code, out)
	}
	hist := p.jobs(t, "history", id)
	if len(hist) != 1 || hist[0]["JobStatus"] != 3.0 {
		t.Errorf("history of removed job: %v", hist)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "sleep.log"))
	for _, want := range []string{"012 (", "Job was held.", "013 (", "Job was released.", "009 (", "Job was aborted"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("event log lacks %q:\n%s", want, log)
		}
	}
}

// publicBinary returns a copy of the test binary that every user may run:
// the test binary sits in a directory only root may enter.
func publicBinary(t testing.TB) string {
	t.Helper()
	bin := copyBinary(t, t.TempDir())
	for d := filepath.Dir(bin); d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	return bin
}

// copyBinary copies the test binary into dir as harrier.
func copyBinary(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "harrier")
	if out, err := exec.Command("cp", harrierBin(t), bin).CombinedOutput(); err != nil {
		t.Fatalf("copy binary: %v: %s", err, out)
	}
	return bin
}

// harrierAs runs a harrier command as another Unix user.
func harrierAs(t testing.TB, env []string, username string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(publicBinary(t), args...)
	cmd.Env = append(append(os.Environ(), asHarrier+"=1"), env...)
	uid, gid := lookupIDs(t, username)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harrier as %s: %v", username, err)
	}
	return string(out), code
}

func TestBadSubmitFilesQueueNothing(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	for _, tc := range []struct{ name, desc, want string }{
		{"unknown.sub", "executable = /bin/true\nexecutible = /bin/true\nqueue\n", "unknown.sub:2:"},
		{"badexpr.sub", "executable = /bin/true\nrequirements = (Memory > \nqueue\n", "badexpr.sub:2:"},
		{"noexe.sub", "executable = /no/such/program\nqueue\n", "noexe.sub:1:"},
		{"badqueue.sub", "executable = /bin/true\nqueue x in (a b\n", "badqueue.sub:2:"},
	} {
		path := filepath.Join(dir, tc.name)
		writeFile(t, path, tc.desc, 0o644)
		out, code := p.harrier(t, "submit", path)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("submit %s: exit %d, output %q; want an error naming %q", tc.name, code, out, tc.want)
		}
	}
	if q := p.jobs(t, "q"); len(q) != 0 {
		t.Errorf("bad submit files queued jobs: %v", q)
	}
}

func TestAgentKilledLosesNoJob(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	c1 := p.submit(t, dir, "long.sub", "executable = /bin/sleep\narguments = 300\nqueue\n")
	c2 := p.submit(t, dir, "many.sub", "executable = /bin/true\nrequirements = false\nqueue 50\n")
	eventually(t, 30*time.Second, "the long job to run", func() bool { return p.jobStatus(t, fmt.Sprintf("%d.0", c1)) == 2 })

	// Kill the agent and restart it alone, as an administrator would.
	p.restartAgent(t)
	q := p.jobs(t, "q")
	seen := map[string]int{}
	for _, ad := range q {
		seen[fmt.Sprintf("%v.%v", ad["ClusterId"], ad["ProcId"])]++
	}
	if len(q) != 51 || seen[fmt.Sprintf("%d.0", c1)] != 1 {
		t.Fatalf("after the agent's restart the queue has %d jobs, want 51: %v", len(q), seen)
	}
	for i := 0; i < 50; i++ {
		if seen[fmt.Sprintf("%d.%d", c2, i)] != 1 {
			t.Errorf("job %d.%d lost or duplicated", c2, i)
		}
	}
	// The job that was running is run again.
	eventually(t, 60*time.Second, "the interrupted job to run again", func() bool {
		return p.jobStatus(t, fmt.Sprintf("%d.0", c1)) == 2
	})
}

// waitCluster waits for the n jobs of cluster c to complete.
func (p *testPool) waitCluster(t testing.TB, c, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.%d", c, i)); code != 0 {
			t.Fatalf("wait: exit %d: %s", code, out)
		}
	}
}

// historyMatches counts the matches of the jobs in the history: a
// claim's jobs after its first need none.
func (p *testPool) historyMatches(t testing.TB) int {
	t.Helper()
	matches := 0
	for _, ad := range p.jobs(t, "history") {
		n, _ := ad["NumJobMatches"].(float64)
		matches += int(n)
	}
	return matches
}

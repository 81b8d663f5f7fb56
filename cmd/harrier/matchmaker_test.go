package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
)

// TestFlockingToASecondMatchmaker runs two pools, each with its own
// matchmaker and execute host; the agent belongs to the first and flocks
// to the second. A job only the second pool's machine accepts runs there;
// the other runs at home.
func TestFlockingToASecondMatchmaker(t *testing.T) {
	n := newNetnsPool(t, "cm1", "cm2", "submit", "exec1", "exec2")
	n.configurePools(
		map[string]string{"cm1": "cm1", "submit": "cm1", "exec1": "cm1", "cm2": "cm2", "exec2": "cm2"},
		map[string]string{"cm1": "matchmaker", "cm2": "matchmaker", "submit": "agent", "exec1": "startd", "exec2": "startd"},
		map[string]string{"submit": "FLOCK_TO = " + n.hosts["cm2"].ip + ":9618"})
	n.daemon("cm1", "matchmaker")
	n.daemon("cm2", "matchmaker")
	n.daemon("submit", "agent")
	n.daemon("exec1", "startd")
	n.daemon("exec2", "startd")

	eventually(t, 30*time.Second, "the home pool's machine to be advertised", func() bool {
		out, code := n.tool("submit", "status")
		return code == 0 && strings.Contains(out, "slot1@exec1") && !strings.Contains(out, "slot1@exec2")
	})
	work := filepath.Join(n.hosts["submit"].dir, "work")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "examples", "hello"), work).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v: %s", err, out)
	}
	writeFile(t, filepath.Join(work, "flock.sub"), `executable   = hello.sh
arguments    = $(host)
input        = words.txt
output       = out.$(host)
error        = err.$(host)
log          = flock.log
requirements = Machine == "$(host)"
queue host in (exec2, exec1)
`, 0o644)
	if out, code := n.tool("submit", "submit", filepath.Join(work, "flock.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	for _, id := range []string{"1.0", "1.1"} {
		if out, code := n.tool("submit", "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
	}
	hist, code := n.tool("submit", "history", "-long")
	if code != 0 {
		t.Fatalf("history: %s", hist)
	}
	for _, want := range []string{`LastRemoteHost = "slot1@exec2"`, `LastRemoteHost = "slot1@exec1"`} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %s:\n%s", want, hist)
		}
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.exec2")); err != nil || !strings.Contains(string(b), "Hello, exec2") {
		t.Errorf("out.exec2: %s %v", b, err)
	}
}

// TestBetterAnalyze asks a personal pool why a job that asks for an
// architecture no machine has stays idle.
func TestBetterAnalyze(t *testing.T) {
	p := startPool(t, 2)
	eventually(t, 30*time.Second, "both slots to be advertised", func() bool {
		out, code := p.harrier(t, "status")
		return code == 0 && strings.Count(out, "slot") >= 2
	})
	dir := copyExample(t, "hello")
	p.submit(t, dir, "sparc.sub", `executable   = hello.sh
requirements = TARGET.Arch == "SPARC"
queue
`)
	out := p.must(t, "q", "-better-analyze", "1.0")
	for _, want := range []string{
		"The Requirements expression for job 1.0 is",
		`TARGET.Arch == "SPARC"`,
		"Of 2 machines,",
		"2 are rejected by your job's requirements",
		"0 are able to run your job",
		"matches no machine: TARGET.Arch == \"SPARC\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("analysis lacks %q:\n%s", want, out)
		}
	}
}

// A job's checkpoint history says how many machines can restore its last
// checkpoint: those of the platform it was taken on.
func TestPrintCheckpointHistory(t *testing.T) {
	job, err := classad.Parse(`[ ClusterId = 4; ProcId = 2; NumCkpts = 2; NumRestores = 1; LastCheckpointPlatform = "LINUX X86_64 avx" ]`)
	if err != nil {
		t.Fatal(err)
	}
	var machines []*classad.ClassAd
	for _, p := range []string{`"LINUX X86_64 avx"`, `"LINUX X86_64 avx avx2"`, `"LINUX X86_64 avx"`, "undefined"} {
		ad, err := classad.Parse(`[ Name = "slot1@h"; CheckpointPlatform = ` + p + ` ]`)
		if err != nil {
			t.Fatal(err)
		}
		machines = append(machines, ad)
	}
	var b bytes.Buffer
	printCheckpointHistory(&b, job, machines)
	for _, want := range []string{
		"4.2: checkpoints taken 2, failed 0; restored from a checkpoint 1 times",
		`Its last checkpoint was taken on platform "LINUX X86_64 avx": 2 of 4 machines restore it`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("history lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPrintAnalysis(t *testing.T) {
	job, err := classad.Parse(`[ ClusterId = 4; ProcId = 2; Owner = "alice"; RequestMemory = 4096;
		ConcurrencyLimits = "sw,db:2,large.x:3,free";
		Requirements = TARGET.OpSys == "LINUX" && TARGET.Memory >= MY.RequestMemory ]`)
	if err != nil {
		t.Fatal(err)
	}
	var machines []*classad.ClassAd
	for i, mem := range []int{1024, 2048, 8192, 8192} {
		ad, err := classad.Parse(fmt.Sprintf(`[ Name = "slot%d@h"; State = "Unclaimed"; OpSys = "LINUX"; Memory = %d;
			Requirements = TARGET.Owner != "alice" || %d == 3 ]`, i, mem, i))
		if err != nil {
			t.Fatal(err)
		}
		machines = append(machines, ad)
	}
	negotiator, err := classad.Parse(`[ ConcurrencyLimit_sw = 1.0; ConcurrencyLimitMax_sw = 1.0; ConcurrencyLimit_db = 1.0;
		ConcurrencyLimitMax_db = 4.0; ConcurrencyLimitDefault_large = 2.0 ]`)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printAnalysis(&b, job, matchmaker.Analyze(job, machines), matchmaker.JobLimits(job, negotiator))
	out := b.String()
	for _, want := range []string{
		"[0]              4",
		"[1]              2",
		"  [1] TARGET.Memory >= MY.RequestMemory",
		"4.2:  Run analysis summary ignoring user priority.  Of 4 machines,",
		"       2 are rejected by your job's requirements",
		"       1 reject your job because of their own requirements",
		"       1 are able to run your job",
		"Condition [1] is the most restrictive (2 of 4 machines)",
		`       1  TARGET.Owner != "alice" || 2 == 3`,
		"  sw: 1 of it, 1 of 1 in use: the job waits until enough is released",
		"  db: 2 of it, 1 of 4 in use\n",
		"  large.x: 3 of it, more than its limit of 2: the job can never start",
		"  free: 1 of it, no limit set",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("analysis lacks %q:\n%s", want, out)
		}
	}
}

func TestUserprioTable(t *testing.T) {
	var ads []*classad.ClassAd
	for _, u := range []matchmaker.UserPriority{
		{Name: "bob", Priority: 50, RealPriority: 5, Factor: 10, ResourcesUsed: 5, AccumulatedUsage: 2 * time.Hour},
		{Name: "alice", Priority: 0.5, RealPriority: 0.5, Factor: 1},
	} {
		ads = append(ads, u.Ad())
	}
	var b bytes.Buffer
	table := &userprioTable{w: &b}
	for _, ad := range ads {
		table.row(ad)
	}
	table.flush()
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "alice ") || !strings.HasPrefix(lines[2], "bob ") {
		t.Fatalf("table not in priority order:\n%s", b.String())
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "bob 50.00 5.00 10.00 5 2.00" {
		t.Errorf("bob's line %q", lines[2])
	}
}

func TestBenchNegotiateSmallPool(t *testing.T) {
	var b bytes.Buffer
	err := runBench([]string{"negotiate", "--machines", "200", "--jobs", "1000", "--users", "10", "--autoclusters", "50", "--runs", "1"}, nil, &b)
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pool: 200 machines, 1000 jobs in 50 resource requests of 10 users", "cycle: median", "matches/s", "baseline (all pairs"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	if err := runBench([]string{"negotiate", "--jobs", "3", "--autoclusters", "5"}, nil, &b); err == nil {
		t.Error("more autoclusters than jobs accepted")
	}
}

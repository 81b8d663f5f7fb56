package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClaimReuseRunsJobsWithoutNewMatches(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	c := p.submit(t, dir, "four.sub", "executable = /bin/true\nqueue 4\n")
	p.waitCluster(t, c, 4)
	matches := p.historyMatches(t)
	// One slot ran four jobs: the first was matched, the others reused its
	// claim. (A lease or timing hiccup may cost one more match, never four.)
	if matches < 1 || matches > 2 {
		t.Errorf("four jobs on one slot took %d matches, want 1 (claim reuse)", matches)
	}
}

func TestJobPolicyExpressions(t *testing.T) {
	p := startPoolWith(t, 1, "PERIODIC_EXPR_INTERVAL = 1")
	dir := t.TempDir()
	held := p.submit(t, dir, "hold.sub", "executable = /bin/sleep\narguments = 300\nperiodic_hold = JobStatus == 2\nqueue\n")
	released := p.submit(t, dir, "release.sub", "executable = /bin/true\nhold = true\nperiodic_release = true\nqueue\n")
	removed := p.submit(t, dir, "remove.sub", "executable = /bin/true\nrequirements = false\nperiodic_remove = true\nqueue\n")
	retried := p.submit(t, dir, "retry.sub", "executable = /bin/false\nmax_retries = 2\nqueue\n")
	told := p.submit(t, dir, "told.sub", "executable = /bin/sleep\narguments = 300\nperiodic_hold = JobStatus == 2\n"+
		"periodic_hold_reason = strcat(\"ran on \", RemoteHost)\nperiodic_hold_subcode = 42\nqueue\n")
	vacated := p.submit(t, dir, "vacate.sub", "executable = /bin/sleep\narguments = 4\n"+
		"periodic_vacate = NumJobStarts == 1 && time() - JobCurrentStartDate > 1\nlog = vacate.log\nqueue\n")
	outlived := p.submit(t, dir, "duration.sub", "executable = /bin/sleep\narguments = 300\nallowed_job_duration = 2\nqueue\n")
	exitHeld := p.submit(t, dir, "exit.sub", "executable = /bin/sh\narguments = \"-c 'exit 7'\"\non_exit_hold = ExitCode != 0\n"+
		"on_exit_hold_reason = strcat(\"exited with \", ExitCode)\non_exit_hold_subcode = ExitCode\nqueue\n")

	heldID := fmt.Sprintf("%d.0", held)
	eventually(t, 60*time.Second, "periodic_hold to hold the running job", func() bool { return p.jobStatus(t, heldID) == 5 })
	ad := p.jobs(t, "q", heldID)[0]
	if r, _ := ad["HoldReason"].(string); !strings.Contains(r, "PeriodicHold") || ad["HoldReasonCode"] != 3.0 {
		t.Errorf("held by policy: HoldReason %q, code %v", r, ad["HoldReasonCode"])
	}
	// The job's own reason and subcode, evaluated as it is held; the
	// duration limit's code.
	for _, c := range []struct {
		cluster int
		reason  string
		subcode float64
		code    float64
	}{{told, "ran on slot1@", 42, 3}, {exitHeld, "exited with 7", 7, 3}, {outlived, "The job exceeded allowed job duration of 2 seconds", 0, 46}} {
		id := fmt.Sprintf("%d.0", c.cluster)
		eventually(t, 60*time.Second, "job "+id+" held by its policy", func() bool { return p.jobStatus(t, id) == 5 })
		ad := p.jobs(t, "q", id)[0]
		if r, _ := ad["HoldReason"].(string); !strings.HasPrefix(r, c.reason) || ad["HoldReasonCode"] != c.code || ad["HoldReasonSubCode"] != c.subcode {
			t.Errorf("job %s held by policy: HoldReason %q, code %v, subcode %v; want %q…, %v, %v", id, r, ad["HoldReasonCode"], ad["HoldReasonSubCode"], c.reason, c.code, c.subcode)
		}
	}
	// periodic_vacate evicts the running job once; it runs again and ends.
	if out, code := p.harrier(t, "wait", "--timeout", "90", fmt.Sprintf("%d.0", vacated)); code != 0 {
		t.Errorf("periodic_vacate: the job did not complete: exit %d: %s", code, out)
	} else if h := p.jobs(t, "history", fmt.Sprintf("%d.0", vacated))[0]; h["NumJobStarts"] != 2.0 {
		t.Errorf("periodic_vacate: NumJobStarts %v, want 2 (one eviction)", h["NumJobStarts"])
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "vacate.log")); !strings.Contains(string(log), "004 (") {
		t.Errorf("periodic_vacate: no eviction in the job's event log:\n%s", log)
	}
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", released)); code != 0 {
		t.Errorf("periodic_release: the job submitted on hold did not complete: exit %d: %s", code, out)
	}
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", removed)); code != 1 {
		t.Errorf("periodic_remove: wait exit %d (%s), want 1 (removed)", code, out)
	}
	if out, code := p.harrier(t, "wait", "--timeout", "90", fmt.Sprintf("%d.0", retried)); code != 0 {
		t.Fatalf("max_retries job: wait exit %d: %s", code, out)
	}
	h := p.jobs(t, "history", fmt.Sprintf("%d.0", retried))[0]
	if h["NumJobCompletions"] != 3.0 || h["ExitCode"] != 1.0 {
		t.Errorf("max_retries = 2 of a failing job: NumJobCompletions %v ExitCode %v, want 3 runs ending with 1", h["NumJobCompletions"], h["ExitCode"])
	}
	af := p.must(t, "q", "-af", "ClusterId", "Owner", "JobStatus")
	if !strings.Contains(af, fmt.Sprintf("%d root 5", held)) {
		t.Errorf("q -af ClusterId Owner JobStatus:\n%s", af)
	}
}

// TestAgentKilledDuringSubmission kills the agent at random moments while
// large clusters are being submitted: after each restart every cluster that
// harrier submit acknowledged is there whole, and nothing else is.
func TestAgentKilledDuringSubmission(t *testing.T) {
	p := startPool(t, 1)
	t.Setenv(asHarrier, "1")
	dir := t.TempDir()
	const jobs = 5000
	writeFile(t, filepath.Join(dir, "big.sub"), fmt.Sprintf("executable = /bin/true\nrequirements = false\nqueue %d\n", jobs), 0o644)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[int]bool{}
	for round := 0; round < 3; round++ {
		cmd := exec.Command(harrierBin(t), "submit", filepath.Join(dir, "big.sub"))
		cmd.Env = append(os.Environ(), p.env...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.IntN(800)) * time.Millisecond
		time.Sleep(delay)
		pid := readPid(filepath.Join(p.dir, "run", "agent.pid"))
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
		var n, c int
		if _, err := fmt.Sscanf(out.String(), "%d job(s) submitted to cluster %d.", &n, &c); err == nil {
			acked[c] = true
		}
		t.Logf("round %d: killed the agent after %s; submit said %q", round, delay, strings.TrimSpace(out.String()))
		eventually(t, 30*time.Second, "the master to restart the agent", func() bool {
			now := readPid(filepath.Join(p.dir, "run", "agent.pid"))
			return now > 0 && now != pid && alive(now)
		})
		eventually(t, 60*time.Second, "the agent to answer", func() bool {
			_, code := p.harrier(t, "q", "-limit", "1")
			return code == 0
		})
		counts := map[int]int{}
		for _, line := range strings.Fields(p.must(t, "q", "-af", "ClusterId")) {
			var c int
			fmt.Sscan(line, &c)
			counts[c]++
		}
		for c := range acked {
			if counts[c] != jobs {
				t.Errorf("round %d: acknowledged cluster %d has %d jobs, want %d", round, c, counts[c], jobs)
			}
		}
		for c, n := range counts {
			if n != jobs {
				t.Errorf("round %d: cluster %d is partial: %d of %d jobs", round, c, n, jobs)
			}
		}
	}
}

func TestMaxIdleMaterializesLate(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	c := p.submit(t, dir, "many.sub", "executable = /bin/true\nrequirements = false\nmax_idle = 3\nqueue 20\n")
	count := func() int { return len(p.jobs(t, "q")) }
	if n := count(); n != 3 {
		t.Fatalf("with max_idle = 3 the queue shows %d of 20 jobs, want 3", n)
	}
	// Each job that leaves Idle lets the next one be made, in order.
	p.must(t, "rm", fmt.Sprintf("%d.0", c), fmt.Sprintf("%d.1", c))
	eventually(t, 20*time.Second, "two more jobs to be made", func() bool {
		ids := strings.Fields(p.must(t, "q", "-af", "ProcId"))
		return strings.Join(ids, " ") == "2 3 4"
	})
	// Removing the cluster removes what is left of it, made or not.
	p.must(t, "hold", fmt.Sprint(c))
	eventually(t, 20*time.Second, "held jobs to stop the making", func() bool {
		return len(p.jobs(t, "q")) == 6 // 3 held, then 3 more idle
	})

	// max_materialize bounds the cluster's jobs in the queue, whatever
	// their state: held ones count, and each that leaves lets one more in.
	m := p.submit(t, dir, "bounded.sub", "executable = /bin/true\nrequirements = false\nhold = true\nmax_materialize = 4\nqueue 10\n")
	procs := func() string {
		return strings.Join(strings.Fields(p.must(t, "q", "-af", "ProcId", "-constraint", fmt.Sprintf("ClusterId == %d", m))), " ")
	}
	if got := procs(); got != "0 1 2 3" {
		t.Fatalf("with max_materialize = 4 the cluster shows jobs %q, want 0 1 2 3", got)
	}
	time.Sleep(2 * time.Second) // held, they stay four
	if got := procs(); got != "0 1 2 3" {
		t.Fatalf("four held jobs of a cluster with max_materialize = 4 became %q", got)
	}
	p.must(t, "rm", fmt.Sprintf("%d.1", m))
	eventually(t, 20*time.Second, "job 4 to take the removed job's place", func() bool { return procs() == "0 2 3 4" })
}

// TestJobThatCannotStartWaits: a job whose shadow cannot start (its owner
// may not run the pool's binary, which lies in a directory only root may
// enter) is not matched to the freed slot again and again: each failed
// start is counted in the job's ad, and the job waits longer before each
// next try.
func TestJobThatCannotStartWaits(t *testing.T) {
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	p := startPoolFrom(t, copyBinary(t, private), 1, "")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	id := fmt.Sprintf("%d.0", p.submitAs(t, "nobody", dir, "true.sub", "executable = /bin/true\nqueue\n"))
	exceptions := func() (float64, map[string]any) {
		ads := p.jobs(t, "q", id)
		if len(ads) != 1 {
			t.Fatalf("job %s: %d ads in the queue", id, len(ads))
		}
		n, _ := ads[0]["NumShadowExceptions"].(float64)
		return n, ads[0]
	}
	eventually(t, 30*time.Second, "the job's first failed start", func() bool { n, _ := exceptions(); return n >= 1 })
	time.Sleep(5 * time.Second)
	n, ad := exceptions()
	// Waits of 1, 2 and 4 s leave room for four tries in these 5 s; a job
	// tried again at each free slot fails some twenty times a second.
	if n > 6 {
		t.Errorf("%v failed starts within 5 s of the first: the job is not waiting between tries", n)
	}
	if reason, _ := ad["LastShadowException"].(string); reason == "" {
		t.Errorf("no LastShadowException in the job ad: %v", ad)
	}
	if st := ad["JobStatus"]; st != 1.0 {
		t.Errorf("JobStatus %v, want 1 (idle)", st)
	}
}

// TestShortClaimLease: the agent renews a claim as often as the startd's
// lease needs, so a job that runs longer than a short CLAIM_LEASE (much
// shorter than the agent's usual 20 s between keepalives) is not evicted.
func TestShortClaimLease(t *testing.T) {
	p := startPoolWith(t, 1, "CLAIM_LEASE = 3\n")
	dir := t.TempDir()
	c := p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 8\nlog = sleep.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	log := readLog(t, filepath.Join(dir, "sleep.log"))
	if strings.Contains(log, "004 (") || strings.Count(log, "001 (") != 1 {
		t.Errorf("the job was evicted or started more than once:\n%s", log)
	}
}

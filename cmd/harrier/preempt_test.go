package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/wire"
)

// preemptTestConf makes negotiation cycles frequent, so that a test sees
// several of them in a few seconds.
const preemptTestConf = "NEGOTIATOR_INTERVAL = 2\n"

// submitAs submits a submit file written into dir as a Unix user and
// returns the cluster.
func (p *testPool) submitAs(t testing.TB, user, dir, name, desc string) int {
	t.Helper()
	path := filepath.Join(dir, name)
	writeFile(t, path, desc, 0o644)
	out, code := harrierAs(t, p.env, user, "submit", path)
	if code != 0 {
		t.Fatalf("submit as %s: exit %d: %s", user, code, out)
	}
	var n, cluster int
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &cluster); err != nil {
		t.Fatalf("submit said %q: %v", out, err)
	}
	return cluster
}

// poolAds returns the pool's ads of one type, as the matchmaker holds them.
func (p *testPool) poolAds(t *testing.T, typ string) []*classad.ClassAd {
	t.Helper()
	pc, err := findPool(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: typ})
	if err != nil {
		t.Fatalf("query %s ads: %v", typ, err)
	}
	var ads []*classad.ClassAd
	for _, text := range reply.Ads {
		ad, err := classad.Parse(text)
		if err != nil {
			t.Fatalf("%s ad: %v", typ, err)
		}
		ads = append(ads, ad)
	}
	return ads
}

// countIn counts the lines of a daemon's log that contain s.
func (p *testPool) countIn(t *testing.T, daemon, s string) int {
	t.Helper()
	return strings.Count(readLog(t, filepath.Join(p.dir, "log", daemon+".log")), s)
}

// startdLog names the log of the pool's only startd.
func (p *testPool) startdLog(t *testing.T) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(p.dir, "log", "*.log"))
	var startds []string
	for _, l := range logs {
		if name := strings.TrimSuffix(filepath.Base(l), ".log"); name != "agent" && name != "matchmaker" && !strings.HasPrefix(name, "master.") {
			startds = append(startds, name)
		}
	}
	if len(startds) != 1 {
		t.Fatalf("startd logs %v, want one", startds)
	}
	return startds[0]
}

// completed waits, two minutes at most, for job id to complete, and
// returns its history record.
func (p *testPool) completed(t testing.TB, id string) map[string]any {
	t.Helper()
	if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait %s: exit %d: %s", id, code, out)
	}
	return p.historyAd(t, id)
}

// historyAd returns a job's ad from the history.
func (p *testPool) historyAd(t testing.TB, id string) map[string]any {
	t.Helper()
	h := p.jobs(t, "history", id)
	if len(h) != 1 {
		t.Fatalf("history of %s: %v", id, h)
	}
	return h[0]
}

// checkPreemptedOnce checks the end of a preemption: the preempted job
// was evicted exactly once and then ran to completion, the preempting job
// ran once, uninterrupted, and the matchmaker preempted once for reason.
func checkPreemptedOnce(t *testing.T, p *testPool, preempted, preempting, preemptedLog, preemptingLog, reason string) {
	t.Helper()
	if out, code := p.harrier(t, "wait", "--timeout", "120", preempted); code != 0 {
		t.Fatalf("the preempted job %s did not complete: exit %d: %s", preempted, code, out)
	}
	log := readLog(t, preemptedLog)
	if n := strings.Count(log, "004 ("); n != 1 {
		t.Errorf("preempted job evicted %d times, want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "001 ("); n != 2 {
		t.Errorf("preempted job started %d times, want 2:\n%s", n, log)
	}
	if !strings.Contains(log, "005 (") {
		t.Errorf("preempted job did not terminate:\n%s", log)
	}
	log = readLog(t, preemptingLog)
	if strings.Count(log, "001 (") != 1 || strings.Contains(log, "004 (") {
		t.Errorf("preempting job did not run exactly once, uninterrupted:\n%s", log)
	}
	if ad := p.historyAd(t, preempting); ad["NumJobStarts"] != 1.0 || ad["NumJobMatches"] != 1.0 {
		t.Errorf("preempting job: NumJobStarts %v, NumJobMatches %v; want 1 and 1", ad["NumJobStarts"], ad["NumJobMatches"])
	}
	// One preemption, not a preemption per cycle.
	if n := p.countIn(t, "matchmaker", "msg=preempting"); n != 1 {
		t.Errorf("the matchmaker preempted %d times, want 1", n)
	}
	if n := p.countIn(t, "matchmaker", "reason="+reason); n != 1 {
		t.Errorf("the matchmaker logged %d preemptions for %s, want 1", n, reason)
	}
	if n := p.countIn(t, p.startdLog(t), `msg="preempting claim"`); n != 1 {
		t.Errorf("the startd preempted %d claims, want 1", n)
	}
}

// TestPreemptByMachineRank: a machine whose RANK prefers some jobs runs
// another; when a preferred job comes, the running one is vacated back to
// the queue, the slot goes to the preferred job, and the vacated job runs
// again once the slot is free, without being preempted again.
func TestPreemptByMachineRank(t *testing.T) {
	p := startPoolWith(t, 1, preemptTestConf+"RANK = TARGET.Preferred =?= true\n")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	a := fmt.Sprintf("%d.0", p.submit(t, dir, "a.sub", "executable = /bin/sleep\narguments = 15\nlog = a.log\nqueue\n"))
	eventually(t, 60*time.Second, "the ordinary job to run", func() bool { return p.jobStatus(t, a) == 2 })
	// The slot's ad says how much its RANK likes the job it runs.
	eventually(t, 30*time.Second, "the slot to publish CurrentRank 0", func() bool {
		m := p.machine(t)
		return m["State"] == "Claimed" && m["CurrentRank"] == 0.0
	})

	b := fmt.Sprintf("%d.0", p.submit(t, dir, "b.sub", "executable = /bin/sleep\narguments = 10\n+Preferred = true\nlog = b.log\nqueue\n"))
	eventually(t, 60*time.Second, "the ordinary job to be evicted", func() bool {
		return strings.Contains(readLog(t, filepath.Join(dir, "a.log")), "004 (")
	})
	eventually(t, 60*time.Second, "the preferred job to run", func() bool { return p.jobStatus(t, b) == 2 })
	if st := p.jobStatus(t, a); st != 1 {
		t.Errorf("the evicted job's JobStatus is %d while the preferred job runs, want 1 (idle)", st)
	}
	eventually(t, 30*time.Second, "the slot to publish the preferred job's CurrentRank", func() bool {
		m := p.machine(t)
		return m["State"] == "Claimed" && m["JobId"] == b && m["CurrentRank"] == 1.0
	})
	checkPreemptedOnce(t, p, a, b, filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), "rank")
}

// TestPreemptByUserPriority: with PREEMPTION_REQUIREMENTS, a user whose
// priority is far better (a priority factor 1000 times smaller) takes a
// slot from another user's running job, and the accountant charges the
// slot to the new user; the preempted user's job runs once the slot is
// free and does not preempt back. Without PREEMPTION_REQUIREMENTS the
// better user waits. The pools run from a binary every user may run, so
// that shadows can run as nobody.
func TestPreemptByUserPriority(t *testing.T) {
	const factors = "PRIORITY_FACTORS = nobody=1000\n"
	sleep := func(secs int, user string) string {
		return fmt.Sprintf("executable = /bin/sleep\narguments = %d\nlog = %s.log\nqueue\n", secs, user)
	}

	t.Run("PreemptionRequirements", func(t *testing.T) {
		p := startPoolFrom(t, publicBinary(t), 1, preemptTestConf+factors+"PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2\n")
		dir := t.TempDir()
		_ = os.Chmod(dir, 0o777)
		a := fmt.Sprintf("%d.0", p.submitAs(t, "nobody", dir, "nobody.sub", sleep(15, "nobody")))
		eventually(t, 60*time.Second, "nobody's job to run", func() bool { return p.jobStatus(t, a) == 2 })

		b := fmt.Sprintf("%d.0", p.submit(t, dir, "root.sub", sleep(10, "root")))
		eventually(t, 60*time.Second, "root's job to run", func() bool { return p.jobStatus(t, b) == 2 })
		if !strings.Contains(readLog(t, filepath.Join(dir, "nobody.log")), "004 (") {
			t.Errorf("nobody's job was not evicted:\n%s", readLog(t, filepath.Join(dir, "nobody.log")))
		}
		if st := p.jobStatus(t, a); st != 1 {
			t.Errorf("nobody's evicted job has JobStatus %d, want 1 (idle)", st)
		}
		// The slot is charged to root now, no longer to nobody.
		eventually(t, 30*time.Second, "the accountant to charge the slot to root", func() bool {
			used := map[string]int64{}
			for _, ad := range p.poolAds(t, matchmaker.TypeAccounting) {
				name, _ := ad.EvalString("Name")
				used[name], _ = ad.EvalInt("ResourcesUsed")
			}
			return used["root"] == 1 && used["nobody"] == 0
		})
		checkPreemptedOnce(t, p, a, b, filepath.Join(dir, "nobody.log"), filepath.Join(dir, "root.log"), "priority")
		// nobody's job ran again under a claim of its own, charged to
		// nobody, not on root's claim.
		if n := p.historyAd(t, a)["NumJobMatches"]; n != 2.0 {
			t.Errorf("nobody's job was matched %v times, want 2", n)
		}
	})

	t.Run("NoPreemptionRequirements", func(t *testing.T) {
		p := startPoolFrom(t, publicBinary(t), 1, preemptTestConf+factors)
		dir := t.TempDir()
		_ = os.Chmod(dir, 0o777)
		a := fmt.Sprintf("%d.0", p.submitAs(t, "nobody", dir, "nobody.sub", sleep(300, "nobody")))
		eventually(t, 60*time.Second, "nobody's job to run", func() bool { return p.jobStatus(t, a) == 2 })
		b := fmt.Sprintf("%d.0", p.submit(t, dir, "root.sub", sleep(10, "root")))
		submitted := time.Now().Unix()

		// Three negotiation cycles that saw root's idle job.
		cycles := map[int64]bool{}
		eventually(t, 60*time.Second, "three negotiation cycles with root's job", func() bool {
			for _, ad := range p.poolAds(t, matchmaker.TypeNegotiator) {
				at, _ := ad.EvalInt("LastNegotiationCycleTime0")
				idle, _ := ad.EvalInt("LastNegotiationCycleNumIdleJobs0")
				if at > submitted && idle > 0 {
					cycles[at] = true
				}
			}
			return len(cycles) >= 3
		})
		if st := p.jobStatus(t, a); st != 2 {
			t.Errorf("nobody's job has JobStatus %d, want 2 (still running)", st)
		}
		if st := p.jobStatus(t, b); st != 1 {
			t.Errorf("root's job has JobStatus %d, want 1 (idle)", st)
		}
		if log := readLog(t, filepath.Join(dir, "nobody.log")); strings.Contains(log, "004 (") {
			t.Errorf("nobody's job was evicted without PREEMPTION_REQUIREMENTS:\n%s", log)
		}
		if n := p.countIn(t, "matchmaker", "msg=preempting"); n != 0 {
			t.Errorf("the matchmaker preempted %d times without PREEMPTION_REQUIREMENTS", n)
		}
		// root's job runs once nobody's is gone.
		p.must(t, "rm", a)
		if out, code := p.harrier(t, "wait", "--timeout", "120", b); code != 0 {
			t.Fatalf("root's job did not complete: exit %d: %s", code, out)
		}
	})
}

func TestPriorityFactors(t *testing.T) {
	got, err := priorityFactors("nobody=1000, alice=2.5\tbob=1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["nobody"] != 1000 || got["alice"] != 2.5 || got["bob"] != 1 {
		t.Errorf("factors %v", got)
	}
	if got, err := priorityFactors(""); err != nil || len(got) != 0 {
		t.Errorf("no factors: %v, %v", got, err)
	}
	for _, bad := range []string{"nobody", "nobody=", "=3", "nobody=0", "nobody=-1", "nobody=x"} {
		if _, err := priorityFactors(bad); err == nil || !strings.Contains(err.Error(), "PRIORITY_FACTORS") {
			t.Errorf("%q: error %v, want one naming PRIORITY_FACTORS", bad, err)
		}
	}
}

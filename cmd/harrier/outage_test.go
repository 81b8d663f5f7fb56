package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoteIOOutage cuts the execute host off the network while its job
// waits on remote I/O: the I/O blocks, resumes when the link is back, and
// the job completes.
func TestRemoteIOOutage(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1")
	n.start("cm", map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd"})
	work := filepath.Join(n.hosts["submit"].dir, "outage")
	writeFile(t, filepath.Join(work, "in.txt"), "written on the submit side\n", 0o644)
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	// The job says it runs, then reads and writes while the test has the
	// link down.
	writeFile(t, filepath.Join(work, "io.sh"), `#!/bin/sh
set -e
echo running > started.txt
sleep 3
cat in.txt > copy.txt
echo after the outage >> copy.txt
`, 0o755)
	writeFile(t, filepath.Join(work, "io.sub"), "executable = io.sh\noutput = io.out\nerror = io.err\nlog = io.log\nqueue\n", 0o644)
	if out, code := n.tool("submit", "submit", filepath.Join(work, "io.sub")); code != 0 {
		t.Fatalf("submit: %s", out)
	}
	eventually(t, 60*time.Second, "the job to start", func() bool {
		_, err := os.Stat(filepath.Join(work, "started.txt"))
		return err == nil
	})
	n.unplug("exec1", true)
	time.Sleep(6 * time.Second)
	if _, err := os.Stat(filepath.Join(work, "copy.txt")); err == nil {
		t.Error("the job wrote copy.txt while its host was off the network")
	}
	n.unplug("exec1", false)
	if out, code := n.tool("submit", "wait", "--timeout", "60", "1.0"); code != 0 {
		errOut, _ := os.ReadFile(filepath.Join(work, "io.err"))
		hist, _ := n.tool("submit", "history", "-long")
		t.Fatalf("wait: exit %d: %s\nstderr: %s\n%s", code, out, errOut, hist)
	}
	if got := mustRead(t, filepath.Join(work, "copy.txt")); got != "written on the submit side\nafter the outage\n" {
		t.Errorf("copy.txt = %q", got)
	}
	if log := mustRead(t, filepath.Join(work, "io.log")); strings.Contains(log, "Job was evicted") || strings.Count(log, "Job executing") != 1 {
		t.Errorf("the job did not run once through:\n%s", log)
	}
}

// TestJobLeaseReconnect takes the submit host off the network, long enough
// for every connection with it to break, while two users' transferred
// jobs run. Alice's job has a lease (job_lease_duration): it runs on and
// ends while its submit machine is out of reach, its starter attaches to
// the shadow again once the link is back, and its output and files arrive
// from that one run, its log telling of the disconnection (022) and the
// reconnection (023). Bob's job has none: it is stopped when its session
// is lost, and runs again.
func TestJobLeaseReconnect(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1")
	n.extra = "NUM_SLOTS = 2"
	n.start("cm", map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd"})
	alice, bob := newUser(t), newUser(t)
	work := filepath.Join(n.hosts["submit"].dir, "lease")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	dirs := map[*user.User]string{}
	for _, u := range []*user.User{alice, bob} {
		lease := ""
		if u == alice {
			lease = "job_lease_duration = 600\n"
		}
		dir := filepath.Join(work, u.Username)
		// Each run leaves a line in a file of the submit side's, through
		// its starter, so that the test can count the runs.
		writeFile(t, filepath.Join(dir, "job.sh"), `#!/bin/sh
echo begin
sleep 35
echo "ran to the end" > result.txt
echo finished
`, 0o755)
		writeFile(t, filepath.Join(dir, "job.sub"), "executable = job.sh\nshould_transfer_files = YES\n"+lease+
			"output = job.out\nerror = job.err\nlog = job.log\nqueue\n", 0o644)
		chownTo(t, u, dir)
		if out, code := n.as(u, "submit", filepath.Join(dir, "job.sub")); code != 0 {
			t.Fatalf("submit as %s: %s", u.Username, out)
		}
		dirs[u] = dir
	}
	eventually(t, 90*time.Second, "both jobs to run", func() bool {
		for _, dir := range dirs {
			if b, _ := os.ReadFile(filepath.Join(dir, "job.log")); !strings.Contains(string(b), "Job executing") {
				return false
			}
		}
		return true
	})
	// Keepalives give up on a silent peer after about 20 seconds; the
	// jobs end, out of reach, about 35 seconds after they started.
	n.unplug("submit", true)
	time.Sleep(45 * time.Second)
	n.unplug("submit", false)

	for _, u := range []*user.User{alice, bob} {
		eventually(t, 3*time.Minute, u.Username+"'s job to complete", func() bool {
			b, _ := os.ReadFile(filepath.Join(dirs[u], "job.log"))
			return strings.Contains(string(b), "Job terminated")
		})
	}
	log := mustRead(t, filepath.Join(dirs[alice], "job.log"))
	if strings.Count(log, "Job executing") != 1 || strings.Contains(log, "Job was evicted") ||
		!strings.Contains(log, "Job disconnected, attempting to reconnect") || !strings.Contains(log, "Job reconnected to") {
		t.Errorf("alice's job did not run once through, disconnected and reconnected:\n%s", log)
	}
	if got := mustRead(t, filepath.Join(dirs[alice], "result.txt")); got != "ran to the end\n" {
		t.Errorf("alice's result.txt = %q", got)
	}
	if got := mustRead(t, filepath.Join(dirs[alice], "job.out")); got != "begin\nfinished\n" {
		t.Errorf("alice's job.out = %q", got)
	}
	if out, _ := n.tool("submit", "history", "-af", "Owner", "NumJobStarts", "NumJobReconnects"); !strings.Contains(out, alice.Username+" 1 1") {
		t.Errorf("history: want %s's job started once and reconnected once:\n%s", alice.Username, out)
	}
	if log := mustRead(t, filepath.Join(dirs[bob], "job.log")); strings.Count(log, "Job executing") != 2 || strings.Contains(log, "reconnect") {
		t.Errorf("bob's job, without a lease, should have been stopped and run again:\n%s", log)
	}
}

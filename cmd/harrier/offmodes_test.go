package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// waitingJob is a submit description of a job that runs until the file
// flag exists, logging to jobs.log.
func waitingJob(flag string) string {
	return fmt.Sprintf("executable = /bin/sh\narguments = \"-c 'while [ ! -e %s ]; do sleep 0.1; done'\"\nlog = jobs.log\nqueue\n", flag)
}

// eventCount counts the events of type code (HTCondor's three digits) of
// cluster in the job event log at path.
func eventCount(t *testing.T, path, code string, cluster int) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), fmt.Sprintf("%s (%03d.000.000)", code, cluster))
}

// off -peaceful lets the running job finish: its exit is recorded once
// and nothing is evicted; no new job starts there meanwhile; then the
// startd stops by itself and stays off. The peaceful stop leaves no drain
// behind: turned on again, the machine runs the job that waited. A user
// may not turn a daemon off.
func TestOffPeaceful(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2\nNEGOTIATOR_INTERVAL = 2")
	host := hostName()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	flag := filepath.Join(dir, "go")
	first := p.submit(t, dir, "first.sub", waitingJob(flag))
	firstID := fmt.Sprint(first) + ".0"
	eventually(t, time.Minute, "the first job to run", func() bool { return p.jobStatus(t, firstID) == 2 })

	alice := newUser(t)
	if out, code := asUser(t, bin, alice.Username, append([]string{asHarrier + "=1"}, p.env...), "off", "-peaceful", "-daemon", host); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user turned a startd off: exit %d: %s", code, out)
	}
	pidFile := filepath.Join(p.dir, "run", host+".pid")
	startd := readPid(pidFile)
	if out := p.must(t, "off", "-peaceful", "-daemon", host); out != host+": turned off "+host+"; stopping once the running jobs have finished\n" {
		t.Errorf("off -peaceful said %q", out)
	}
	// The job runs until the flag exists: the startd waits for it.
	if who := p.must(t, "who"); !regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s +%d .* stopping$`, host, host, startd)).MatchString(who) {
		t.Errorf("who does not show the startd stopping:\n%s", who)
	}
	eventually(t, time.Minute, "the idle slot to leave service", func() bool {
		st := p.slotStates(t)
		return st["slot1@"+host] == "Owner" || st["slot2@"+host] == "Owner"
	})
	second := p.submit(t, dir, "second.sub", "executable = /bin/true\nlog = jobs.log\nqueue\n")
	secondID := fmt.Sprint(second) + ".0"
	if n := p.nextCycleMatches(t); n != 0 {
		t.Errorf("a cycle while the startd stops peacefully made %d matches", n)
	}

	made := p.cgroups()
	writeFile(t, flag, "", 0o644)
	eventually(t, time.Minute, "the first job to complete", func() bool { return p.jobStatus(t, firstID) == 0 })
	eventually(t, time.Minute, "the startd to stop", func() bool { return readPid(pidFile) == 0 && !alive(startd) })
	// What its slots had of the kernel went with it.
	if len(made) == 0 {
		t.Log("the startd made no cgroups here (not root, or no cgroup file system): nothing left to look for")
	} else if left := p.cgroups(); len(left) > 0 {
		t.Errorf("the stopped startd left its slots' cgroups: %v (it had %v)", left, made)
	}
	if who := p.must(t, "who"); !regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s +- .* off$`, host, host)).MatchString(who) {
		t.Errorf("who does not show the startd off:\n%s", who)
	}
	log := filepath.Join(dir, "jobs.log")
	if n := eventCount(t, log, "005", first); n != 1 {
		t.Errorf("%d completion events for the first job, want 1", n)
	}
	if n := eventCount(t, log, "004", first); n != 0 {
		t.Errorf("the first job was evicted %d times", n)
	}
	if starts := p.historyAd(t, firstID)["NumJobStarts"]; starts != float64(1) {
		t.Errorf("the first job started %v times, want 1", starts)
	}
	if st := p.jobStatus(t, secondID); st != 1 {
		t.Errorf("the second job's status with the startd off: %d, want 1 (idle)", st)
	}

	p.must(t, "on", "-daemon", host)
	if out, code := p.harrier(t, "wait", "--timeout", "120", secondID); code != 0 {
		t.Fatalf("the second job did not complete once the startd was on: exit %d: %s", code, out)
	}
}

// off -fast kills the running job at once, without a checkpoint: it goes
// back to Idle, and runs again, from the start, once the startd is on. A
// user may not turn a daemon off.
func TestOffFast(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NEGOTIATOR_INTERVAL = 2")
	host := hostName()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	flag := filepath.Join(dir, "go")
	c := p.submit(t, dir, "job.sub", waitingJob(flag))
	id := fmt.Sprint(c) + ".0"
	eventually(t, time.Minute, "the job to run", func() bool { return p.jobStatus(t, id) == 2 })

	alice := newUser(t)
	if out, code := asUser(t, bin, alice.Username, append([]string{asHarrier + "=1"}, p.env...), "off", "-fast", "-daemon", host); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user turned a startd off: exit %d: %s", code, out)
	}
	pidFile := filepath.Join(p.dir, "run", host+".pid")
	startd := readPid(pidFile)
	if out := p.must(t, "off", "-fast", "-daemon", host); out != host+": turned off "+host+"\n" {
		t.Errorf("off -fast said %q", out)
	}
	if readPid(pidFile) != 0 || alive(startd) {
		t.Fatal("the startd runs after off -fast")
	}
	eventually(t, time.Minute, "the killed job to wait again", func() bool { return p.jobStatus(t, id) == 1 })
	log := filepath.Join(dir, "jobs.log")
	b, _ := os.ReadFile(log)
	if n := eventCount(t, log, "004", c); n != 1 || !strings.Contains(string(b), "(0) Job was not checkpointed.") {
		t.Errorf("%d eviction events, want 1, not checkpointed:\n%s", n, b)
	}

	p.must(t, "on", "-daemon", host)
	eventually(t, time.Minute, "the job to run again", func() bool { return p.jobStatus(t, id) == 2 })
	writeFile(t, flag, "", 0o644)
	if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("the job did not complete: exit %d: %s", code, out)
	}
	if n := eventCount(t, log, "005", c); n != 1 {
		t.Errorf("%d completion events, want 1", n)
	}
	if starts := p.historyAd(t, id)["NumJobStarts"]; starts != float64(2) {
		t.Errorf("the job started %v times, want 2", starts)
	}
}

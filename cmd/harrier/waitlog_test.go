package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWaitOnJobLog: harrier wait watches a job event log shared by two
// clusters on a real pool, as condor_wait does: for any N jobs, one job,
// and all of them (returning only once every job has left the queue);
// it gives up with exit 1 when time expires or the job is not in the log.
func TestWaitOnJobLog(t *testing.T) {
	p := startPool(t, 2)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	log := filepath.Join(dir, "many.log")
	sub := "executable = /bin/sh\narguments = \"-c 'sleep $(Process)'\"\nlog = many.log\nqueue 4\n"
	c1 := p.submit(t, dir, "a.sub", sub)
	c2 := p.submit(t, dir, "b.sub", sub)

	out := p.must(t, "wait", "-num", "1", "-status", log)
	if !strings.HasSuffix(out, "Specified job(s) done.\n") || !strings.Contains(out, fmt.Sprintf("%d.0.0 submitted\n", c1)) || !strings.Contains(out, " completed.\n") {
		t.Errorf("wait -num 1 -status:\n%s", out)
	}
	if out := p.must(t, "wait", log, fmt.Sprintf("%d.3", c1)); out != "Specified job(s) done.\n" {
		t.Errorf("wait for one job: %q", out)
	}
	if out := p.must(t, "wait", log); out != "All jobs done.\n" {
		t.Errorf("wait for all: %q", out)
	}
	if q := p.jobs(t, "q"); len(q) != 0 {
		t.Errorf("wait returned with jobs in the queue: %v", q)
	}
	if n := strings.Count(mustRead(t, log), "\n005 ("); n != 8 {
		t.Errorf("%d terminated events in the log, want 8", n)
	}
	if out := p.must(t, "wait", "-echo", log, fmt.Sprint(c2)); strings.Count(out, "005 (") != 4 || !strings.HasSuffix(out, "Specified job(s) done.\n") {
		t.Errorf("wait -echo for cluster %d:\n%s", c2, out)
	}

	if out, code := p.harrier(t, "wait", log, "999"); code != 1 || !strings.Contains(out, "no job 999 in") {
		t.Errorf("wait for a job not in the log: exit %d: %s", code, out)
	}
	p.submit(t, dir, "long.sub", "executable = /bin/sleep\narguments = 300\nlog = long.log\nqueue\n")
	if out, code := p.harrier(t, "wait", "-wait", "1", filepath.Join(dir, "long.log")); code != 1 || out != "Time expired.\n" {
		t.Errorf("wait -wait 1 on a long job: exit %d: %q", code, out)
	}
	if out, code := p.harrier(t, "wait", filepath.Join(dir, "missing.log")); code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("wait on a missing log: exit %d: %s", code, out)
	}
}

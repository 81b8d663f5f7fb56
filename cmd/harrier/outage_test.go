package main

import (
	"os"
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

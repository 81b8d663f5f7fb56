package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// cleanupScript cleans up when it gets SIGTERM: it writes cleanup.txt in
// its submit directory and exits.
const cleanupScript = `#!/bin/sh
trap 'echo cleaned up > cleanup.txt; exit 0' TERM
echo running > running.txt
while :; do sleep 1; done
`

// TestGracefulRemoval removes running jobs that clean up on SIGTERM. As
// in HTCondor (GRACEFULLY_REMOVE_JOBS is true by default), a removed job
// gets its kill signal and its grace time, and cleans up, unless it says
// want_graceful_removal = false: then it is killed at once.
func TestGracefulRemoval(t *testing.T) {
	p := startPool(t, 3)
	for _, tc := range []struct {
		setting  string
		cleansUp bool
	}{
		{"", true},
		{"want_graceful_removal = true", true},
		{"want_graceful_removal = false", false},
	} {
		dir := t.TempDir()
		_ = os.Chmod(dir, 0o755)
		writeFile(t, filepath.Join(dir, "cleanup.sh"), cleanupScript, 0o755)
		c := p.submit(t, dir, "cleanup.sub", "executable = cleanup.sh\njob_max_vacate_time = 60\n"+tc.setting+"\nqueue\n")
		id := fmt.Sprintf("%d.0", c)
		eventually(t, 60*time.Second, "job "+id+" to run", func() bool {
			_, err := os.Stat(filepath.Join(dir, "running.txt"))
			return err == nil
		})
		p.must(t, "rm", id)
		eventually(t, 90*time.Second, "job "+id+" to leave the queue", func() bool { return p.jobStatus(t, id) == 0 })
		b, err := os.ReadFile(filepath.Join(dir, "cleanup.txt"))
		switch {
		case tc.cleansUp && string(b) != "cleaned up\n":
			t.Errorf("%q: the removed job did not clean up: %q, %v", tc.setting, b, err)
		case !tc.cleansUp && err == nil:
			t.Errorf("%q: the removed job cleaned up (%q); it should have been killed at once", tc.setting, b)
		}
		if h := p.jobs(t, "history", id); len(h) != 1 || h[0]["JobStatus"] != 3.0 {
			t.Errorf("%q: history %v, want the job removed", tc.setting, h)
		}
	}
}

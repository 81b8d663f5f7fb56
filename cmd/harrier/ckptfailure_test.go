package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A job whose checkpoint cannot be restored (an input it reads changed
// since) starts from the beginning, and says so where its user looks: the
// job ad counts the failure and keeps its reason, the execute event tells
// it, and q -better-analyze shows it.
func TestRestoreFailureIsRecorded(t *testing.T) {
	p := startPool(t, 1)
	dir, id := changeCheckpointedInput(t, p, "")
	p.must(t, "release", id)
	var job map[string]any
	eventually(t, 60*time.Second, "the job to run again", func() bool {
		job = p.jobs(t, "q", id)[0]
		n, _ := job["NumJobStarts"].(float64)
		return n >= 2
	})
	if n, _ := job["NumRestoreFailures"].(float64); n != 1 {
		t.Errorf("NumRestoreFailures = %v, want 1", job["NumRestoreFailures"])
	}
	if n, _ := job["NumFreshStarts"].(float64); n != 2 {
		t.Errorf("NumFreshStarts = %v, want 2 (the first start and this one)", job["NumFreshStarts"])
	}
	if r, _ := job["LastRestoreFailure"].(string); !strings.Contains(r, "input changed since the checkpoint") {
		t.Errorf("LastRestoreFailure = %q", r)
	}
	eventually(t, 10*time.Second, "the execute event to tell", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "read.log"))
		return strings.Contains(string(b), "Not restored from its checkpoint (") &&
			strings.Contains(string(b), "): started from the beginning.")
	})
	if out := p.must(t, "q", "-better-analyze", id); !strings.Contains(out, "Last restore failure: ") ||
		!strings.Contains(out, "restores failed 1") {
		t.Errorf("q -better-analyze does not tell of the failed restore:\n%s", out)
	}
	p.must(t, "rm", id)
}

// A job vacated where it cannot be checkpointed (no container here) is
// stopped without one, and its record says why.
func TestCheckpointFailureIsRecorded(t *testing.T) {
	p := startPoolWith(t, 1, "SANDBOX = process\n")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	c := p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 300\nlog = sleep.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "the job to run", func() bool { return p.jobStatus(t, id) == 2 })
	p.must(t, "vacate", id)
	var job map[string]any
	eventually(t, 60*time.Second, "the failure to be recorded", func() bool {
		job = p.jobs(t, "q", id)[0]
		n, _ := job["NumCheckpointFailures"].(float64)
		return n == 1
	})
	if r, _ := job["LastCheckpointFailure"].(string); !strings.Contains(r, "cannot be checkpointed here") {
		t.Errorf("LastCheckpointFailure = %q", r)
	}
	eventually(t, 30*time.Second, "the eviction event to tell", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "sleep.log"))
		return strings.Contains(string(b), "(0) Job was not checkpointed.") && strings.Contains(string(b), "could not be checkpointed: ")
	})
	p.must(t, "rm", id)
}

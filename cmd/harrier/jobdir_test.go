package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harrier.dev/harrier/sandbox"
)

// TestContainerJobsOfAClaimSeeTheirOwnDirectory runs the jobs of one
// claim in containers, each in its own submit-side directory through
// iofs, one after the other on one slot, whose iofs mount point they
// use in turn: each job sees its own directory and nothing of the
// others', and no mount is left behind.
func TestContainerJobsOfAClaimSeeTheirOwnDirectory(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	p := startPoolWith(t, 1, "SANDBOX = container\nNUM_SLOTS = 1")
	dir := t.TempDir()
	const jobs = 3
	for i := 0; i < jobs; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%d", i))
		writeFile(t, filepath.Join(d, fmt.Sprintf("marker%d", i)), "", 0o644)
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	c := p.submit(t, dir, "dirs.sub", `executable = /bin/sh
arguments = "-c 'ls -A; echo left > left'"
initialdir = d$(Process)
output = listing
should_transfer_files = NO
queue `+fmt.Sprint(jobs)+"\n")
	for i := 0; i < jobs; i++ {
		if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.%d", c, i)); code != 0 {
			t.Fatalf("wait: exit %d: %s", code, out)
		}
	}
	for i := 0; i < jobs; i++ {
		listing := strings.Fields(mustRead(t, filepath.Join(dir, fmt.Sprintf("d%d", i), "listing")))
		for j := 0; j < jobs; j++ {
			if sees := strings.Contains(strings.Join(listing, " "), fmt.Sprintf("marker%d", j)); sees != (i == j) {
				t.Errorf("job %d sees %v in its directory", i, listing)
			}
		}
		if strings.Contains(strings.Join(listing, " "), "left") {
			t.Errorf("job %d sees a file it had not written yet: %v", i, listing)
		}
	}
	matches := 0
	for _, ad := range p.jobs(t, "history") {
		n, _ := ad["NumJobMatches"].(float64)
		matches += int(n)
	}
	// As in TestClaimReuseRunsJobsWithoutNewMatches: a lease or timing
	// hiccup may cost one more match, never one a job.
	if matches < 1 || matches >= jobs {
		t.Errorf("%d jobs on one slot took %d matches: they did not share a claim", jobs, matches)
	}
	mounts := mustRead(t, "/proc/self/mountinfo")
	for _, l := range strings.Split(mounts, "\n") {
		if strings.Contains(l, filepath.Join(p.dir, "execute")) && strings.Contains(l, "iofs.") {
			t.Errorf("a job's directory is still mounted: %s", l)
		}
	}
}

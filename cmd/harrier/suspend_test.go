package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/sandbox"
)

// TestOwnerSuspendsAndContinues: a job's owner stops its processes where
// they are (harrier suspend, HTCondor's condor_suspend) and lets them run
// on (harrier continue); another user may do neither; the job's record
// and event log say so. A suspended job is checkpointed, vacated and
// removed as a running one.
func TestOwnerSuspendsAndContinues(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	p := startPoolFrom(t, publicBinary(t), 1, "SANDBOX = container\nNUM_SLOTS = 1")
	alice, bob := newUser(t), newUser(t)
	dir := filepath.Join(alice.HomeDir, "count")
	writeFile(t, filepath.Join(dir, "count.sh"), "i=0\nwhile :; do i=$((i+1)); echo $i > count; sleep 0.1; done\n", 0o644)
	au, ag := lookupIDs(t, alice.Username)
	chownAll(t, dir, au, ag)
	c := p.submitAs(t, alice.Username, dir, "count.sub", "executable = /bin/sh\narguments = count.sh\nlog = count.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	defer p.harrier(t, "rm", id)
	count := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "count"))
		return strings.TrimSpace(string(b))
	}
	eventually(t, 60*time.Second, "the job to count", func() bool { return p.jobStatus(t, id) == 2 && count() != "" })

	as := func(user, cmd string) (string, int) { return harrierAs(t, p.env, user, cmd, id) }
	if out, code := as(bob.Username, "suspend"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("bob's suspend of alice's job: exit %d: %s", code, out)
	}
	if out, code := as(alice.Username, "continue"); code == 0 || !strings.Contains(out, "not suspended") {
		t.Errorf("continue of a running job: exit %d: %s", code, out)
	}
	if out, code := as(alice.Username, "suspend"); code != 0 || !strings.Contains(out, "being suspended") {
		t.Fatalf("alice's suspend: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the job to be suspended", func() bool { return p.jobStatus(t, id) == 7 })
	// Stopped: the count a moment after the suspension stays.
	time.Sleep(300 * time.Millisecond)
	before := count()
	time.Sleep(time.Second)
	if after := count(); after != before {
		t.Errorf("the suspended job counted on from %s to %s", before, after)
	}
	if out, code := as(bob.Username, "continue"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("bob's continue of alice's job: exit %d: %s", code, out)
	}
	if p.jobStatus(t, id) != 7 {
		t.Error("the job ran on after bob's continue")
	}
	if out, code := as(alice.Username, "continue"); code != 0 {
		t.Fatalf("alice's continue: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the job to run on", func() bool { return p.jobStatus(t, id) == 2 && count() != before })
	log := mustRead(t, filepath.Join(dir, "count.log"))
	for _, want := range []string{"Job was suspended.", "Job was unsuspended."} {
		if !strings.Contains(log, want) {
			t.Errorf("the event log lacks %q:\n%s", want, log)
		}
	}
	if ads := p.jobs(t, "q", id); len(ads) != 1 || ads[0]["NumJobSuspensions"] != float64(1) {
		t.Errorf("the job's record: %v, want NumJobSuspensions 1", ads)
	}

	// Checkpointed while suspended, it stays suspended; vacated, it
	// runs on elsewhere from its checkpoint, no longer suspended.
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	attr := func(name string) any {
		if ads := p.jobs(t, "q", id); len(ads) == 1 {
			return ads[0][name]
		}
		return nil
	}
	if out, code := as(alice.Username, "suspend"); code != 0 {
		t.Fatalf("alice's second suspend: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the job to be suspended again", func() bool { return p.jobStatus(t, id) == 7 })
	if out, code := as(alice.Username, "checkpoint"); code != 0 {
		t.Fatalf("checkpoint of the suspended job: exit %d: %s", code, out)
	}
	eventually(t, 60*time.Second, "the suspended job's checkpoint", func() bool { return attr("NumCkpts") == float64(1) })
	time.Sleep(300 * time.Millisecond)
	frozen := count()
	time.Sleep(time.Second)
	if st, now := p.jobStatus(t, id), count(); st != 7 || now != frozen {
		t.Errorf("after its checkpoint the suspended job is in status %d, counting from %s to %s", st, frozen, now)
	}
	if out, code := as(alice.Username, "vacate"); code != 0 {
		t.Fatalf("vacate of the suspended job: exit %d: %s", code, out)
	}
	eventually(t, 60*time.Second, "the vacated job to run on from its checkpoint", func() bool {
		return attr("NumRestores") == float64(1) && p.jobStatus(t, id) == 2 && count() != frozen
	})
	if n, err := strconv.Atoi(count()); err != nil || n < atoi(frozen) {
		t.Errorf("after the restore the job counts %q, from %s: it started over", count(), frozen)
	}

	// Removed while suspended, it stops as a running job does.
	if out, code := as(alice.Username, "suspend"); code != 0 {
		t.Fatalf("alice's third suspend: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the job to be suspended a third time", func() bool { return p.jobStatus(t, id) == 7 })
	if out, code := as(alice.Username, "rm"); code != 0 {
		t.Fatalf("alice's rm of her suspended job: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the suspended job to leave the queue", func() bool { return p.jobStatus(t, id) == 0 })
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLeaveInQueue: a completed job stays in the queue while its
// leave_in_queue holds, and leaves when it stops holding (a few seconds
// after completion) or when its owner removes it; harrier wait returns
// at its completion all the same; another user cannot remove it.
func TestLeaveInQueue(t *testing.T) {
	p := startPoolFrom(t, publicBinary(t), 1, "NEGOTIATOR_INTERVAL = 1\nPERIODIC_EXPR_INTERVAL = 1")
	alice, bob := newUser(t), newUser(t)
	const job = "executable = /bin/true\nshould_transfer_files = NO\n"
	brief := p.submitAs(t, alice.Username, alice.HomeDir, "brief.sub", job+"log = brief.log\nsubmit_event_notes = kept a little\njob_ad_information_attrs = JobStatus, Missing\n"+
		"leave_in_queue = JobStatus == 4 && (time() - CompletionDate) < 4\nqueue\n")
	kept := p.submitAs(t, alice.Username, alice.HomeDir, "kept.sub", job+"leave_in_queue = true\nqueue\n")
	briefID, keptID := fmt.Sprintf("%d.0", brief), fmt.Sprintf("%d.0", kept)
	for _, id := range []string{briefID, keptID} {
		if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
	}
	// The submit event carries the job's notes, as HTCondor's does.
	if log, err := os.ReadFile(filepath.Join(alice.HomeDir, "brief.log")); err != nil || !strings.Contains(string(log), "Job submitted from host: <") ||
		!strings.Contains(string(log), ">\n    kept a little\n...") {
		t.Errorf("the submit event lacks its notes: %v\n%s", err, log)
	}
	// And each event is followed by the attributes job_ad_information_attrs
	// names, as the event left them.
	if log, _ := os.ReadFile(filepath.Join(alice.HomeDir, "brief.log")); !strings.Contains(string(log), "Job ad information event triggered.\nTriggerEventTypeNumber = 0\nJobStatus = 1\n...") ||
		!strings.Contains(string(log), "Job ad information event triggered.\nTriggerEventTypeNumber = 5\nJobStatus = 4\n...") {
		t.Errorf("the event log lacks the JobAdInformation events:\n%s", log)
	}
	if out := strings.TrimSpace(p.must(t, "q", "-allusers", "-af", "JobStatus", keptID)); out != "4" {
		t.Errorf("the kept job's JobStatus in the queue: %q, want 4", out)
	}
	inQueue := func(id string) bool { return strings.TrimSpace(p.must(t, "q", "-allusers", "-af", "ProcId", id)) != "" }
	eventually(t, 30*time.Second, "the job kept a few seconds to leave the queue", func() bool { return !inQueue(briefID) })
	if h := p.historyAd(t, briefID); h["JobStatus"] != float64(4) {
		t.Errorf("the job's history: %v", h)
	}
	if !inQueue(keptID) {
		t.Fatal("the job kept while true left the queue")
	}
	if out, code := harrierAs(t, p.env, bob.Username, "rm", keptID); code == 0 {
		t.Errorf("bob removed alice's job: %s", out)
	}
	if out, code := harrierAs(t, p.env, alice.Username, "rm", keptID); code != 0 {
		t.Fatalf("alice's rm: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "the removed job to leave the queue", func() bool { return !inQueue(keptID) })
}

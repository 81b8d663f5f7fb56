package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQeditFixesAHeldJob: on a real pool a job that goes over its
// request_memory is held; another user may not edit it, its owner may not
// change the attributes the agent protects, but fixes request_memory with
// qedit, releases it, and it completes.
func TestQeditFixesAHeldJob(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	writeFile(t, filepath.Join(h.dir, "hog.sh"), "#!/bin/sh\nx=$(head -c 100000000 /dev/zero | tr '\\0' a)\necho \"held ${#x} bytes\"\n", 0o755)
	out, code := h.tool(t, alice, "submit", h.submitFile(t, "hog.sub",
		"executable = hog.sh\noutput = hog.out\nrequest_memory = 32\nqueue\n"))
	id := fmt.Sprintf("%d.0", submitted(t, out, code))
	eventually(t, 60*time.Second, "the job to be held for its memory", func() bool { return h.jobStatus(t, id) == 5 })
	if job := h.jobs(t, "q", id)[0]; job["HoldReasonCode"] != 34.0 {
		t.Fatalf("held with code %v (%v), want 34 (over its memory)", job["HoldReasonCode"], job["HoldReason"])
	}

	as := func(user string, wantCode int, wantOut string, args ...string) {
		t.Helper()
		out, code := h.tool(t, user, append([]string{"qedit"}, args...)...)
		if code != wantCode || !strings.Contains(out, wantOut) {
			t.Errorf("qedit %v: exit %d, want %d saying %q:\n%s", args, code, wantCode, wantOut, out)
		}
	}
	as(bob, 1, "permission denied", id, "RequestMemory", "512")
	as(bob, 1, "Set attribute \"RequestMemory\" for 0 matching jobs", alice, "RequestMemory", "512")
	for _, attr := range []string{"Owner", "ClusterId", "ProcId", "JobStatus", "jobstatus", "QDate", "User"} {
		as(alice, 1, "attribute "+attr+" may not be changed", id, attr, "1")
	}
	as(alice, 1, "value of RequestMemory", id, "RequestMemory", "(512")
	if m := h.jobs(t, "q", id)[0]["RequestMemory"]; m != 32.0 {
		t.Fatalf("refused edits changed RequestMemory to %v", m)
	}

	as(alice, 0, "Set attribute \"RequestMemory\" for 1 matching jobs", id, "RequestMemory", "512")
	as(alice, 0, "Set attribute \"Note\" for 1 matching jobs", "-constraint", "RequestMemory == 512", `Note="fixed by qedit"`)
	job := h.jobs(t, "q", id)[0]
	if job["RequestMemory"] != 512.0 || job["Note"] != "fixed by qedit" || job["JobStatus"] != 5.0 {
		t.Fatalf("after qedit: RequestMemory %v Note %v JobStatus %v", job["RequestMemory"], job["Note"], job["JobStatus"])
	}
	if out, code := h.tool(t, alice, "release", id); code != 0 {
		t.Fatalf("release: exit %d: %s", code, out)
	}
	eventually(t, 60*time.Second, "the fixed job to complete", func() bool { return h.jobStatus(t, id) == 0 })
	if hist := h.jobs(t, "history", id); len(hist) != 1 || hist[0]["JobStatus"] != 4.0 || hist[0]["RequestMemory"] != 512.0 {
		t.Errorf("history: %v", hist)
	}
	if got := mustRead(t, filepath.Join(h.dir, "hog.out")); got != "held 100000000 bytes\n" {
		t.Errorf("the job wrote %q", got)
	}
}

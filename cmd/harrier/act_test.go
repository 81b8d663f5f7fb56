package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestActBySelection: rm, hold and release by -constraint, -all and owner
// name on a real pool with two users. A user's selections reach only their
// own jobs, and naming another's job or another user is refused and
// changes nothing; root acts on anyone's jobs by name and with -all.
func TestActBySelection(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	submit := func(user, name string) int {
		t.Helper()
		out, code := h.tool(t, user, "submit", h.submitFile(t, name,
			"executable = /bin/sleep\narguments = 300\nrequirements = false\nhold = true\n+Size = $(Process)\nqueue 3\n"))
		return submitted(t, out, code)
	}
	a, b := submit(alice, "a.sub"), submit(bob, "b.sub")
	// states returns the JobStatus of each job of a cluster, in order.
	states := func(c int) string {
		t.Helper()
		return strings.Join(strings.Fields(h.must(t, "q", "-af", "JobStatus", "-constraint", fmt.Sprintf("ClusterId == %d", c))), " ")
	}
	as := func(user string, wantCode int, wantOut string, args ...string) {
		t.Helper()
		out, code := h.tool(t, user, args...)
		if code != wantCode || !strings.Contains(out, wantOut) {
			t.Errorf("%v as %s: exit %d, want %d saying %q:\n%s", args, user[:2], code, wantCode, wantOut, out)
		}
	}

	as(alice, 1, "No job you may act on matched", "rm", bob)
	as(alice, 1, "No job you may act on matched", "release", "-constraint", fmt.Sprintf("ClusterId == %d", b))
	as(alice, 1, "permission denied", "rm", fmt.Sprintf("%d.0", b))
	if got := states(b); got != "5 5 5" {
		t.Fatalf("bob's jobs changed by alice's attempts: %s", got)
	}
	as(alice, 0, fmt.Sprintf("Job %d.2 released", a), "release", "-constraint", "Size >= 1")
	if got := states(a); got != "5 1 1" {
		t.Errorf("after release -constraint Size >= 1: %s, want 5 1 1", got)
	}
	as(alice, 0, fmt.Sprintf("Job %d.1 held", a), "hold", alice, "-constraint", "false")
	as(alice, 2, "want job ids", "hold")
	as(alice, 0, fmt.Sprintf("Job %d.2 marked for removal", a), "rm", "-all")
	if got := states(a); got != "" {
		t.Errorf("alice's jobs after rm -all: %q", got)
	}
	if got := states(b); got != "5 5 5" {
		t.Fatalf("bob's jobs changed by alice's rm -all: %s", got)
	}
	as("root", 0, fmt.Sprintf("Job %d.2 released", b), "release", "-reason", "fixed by root", bob)
	if got := states(b); got != "1 1 1" {
		t.Errorf("bob's jobs after root's release by name: %s", got)
	}
	if r := h.must(t, "q", "-af", "ReleaseReason", "-constraint", fmt.Sprintf("ClusterId == %d && ProcId == 0", b)); r != "fixed by root\n" {
		t.Errorf("ReleaseReason %q", r)
	}
	as("root", 0, fmt.Sprintf("Job %d.0 marked for removal", b), "rm", "-all")
	if out := h.must(t, "q", "-totals"); !strings.HasPrefix(out, "Total for query: 0 jobs;") {
		t.Errorf("after root's rm -all: %s", out)
	}
}

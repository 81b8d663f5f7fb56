package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// submitted parses harrier submit's answer, failing the test on an error.
func submitted(t *testing.T, out string, code int) int {
	t.Helper()
	var n, c int
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &c); code != 0 || err != nil {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	return c
}

// newUsersPool is a pool whose jobs belong to several users: its daemons
// run the binary every user may run, and users write their submit files
// into one directory.
func newUsersPool(t *testing.T) *hostile {
	t.Helper()
	bin := publicBinary(t)
	h := &hostile{testPool: startPoolFrom(t, bin, 1, ""), bin: bin, dir: t.TempDir()}
	if err := os.Chmod(h.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return h
}

// fields returns the lines of out as their space-separated fields.
func fields(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// TestQueueViews: harrier q on a real pool shows the caller's batches by
// default, one line each with done, running, idle and held counts; other
// users' jobs only with -allusers, an owner name, or to root; -nobatch,
// -hold (with reasons), -run (with hosts), -totals and -af:jh.
func TestQueueViews(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	submit := func(user, name, desc string) int {
		t.Helper()
		out, code := h.tool(t, user, "submit", h.submitFile(t, name, desc))
		return submitted(t, out, code)
	}
	sweep := submit(alice, "sweep.sub", "executable = /bin/true\nbatch_name = sweep\nqueue 2\nhold = true\nqueue 1\n")
	eventually(t, 60*time.Second, "the sweep's two jobs to finish", func() bool {
		return len(h.jobs(t, "q", fmt.Sprint(sweep))) == 1
	})
	sleeps := submit(alice, "sleep.sub", "executable = /bin/sleep\narguments = 300\nqueue 2\n")
	eventually(t, 60*time.Second, "a sleep to run", func() bool {
		return strings.TrimSpace(h.must(t, "q", "-af", "JobStatus", "-constraint", fmt.Sprintf("ClusterId == %d && ProcId == 0", sleeps))) == "2"
	})
	theirs := submit(bob, "bob.sub", "executable = /bin/true\nhold = true\nqueue\n")

	tool := func(user string, args ...string) string {
		t.Helper()
		out, code := h.tool(t, user, args...)
		if code != 0 {
			t.Fatalf("q %v as %s: exit %d: %s", args, user, code, out)
		}
		return out
	}
	out := tool(alice, "q")
	date := regexp.MustCompile(`\d+/\d+ \d\d:\d\d`)
	want := fmt.Sprintf(`OWNER BATCH_NAME SUBMITTED DONE RUN IDLE HOLD TOTAL JOB_IDS
%s sweep DATE 2 _ _ 1 3 %d.2
%s ID: %d DATE _ 1 1 _ 2 %d.0-1

Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, 1 held, 0 suspended`, alice, sweep, alice, sleeps, sleeps)
	var got []string
	for _, row := range fields(date.ReplaceAllString(out, "DATE")) {
		got = append(got, strings.Join(row, " "))
	}
	if strings.Join(got, "\n") != want {
		t.Errorf("q as alice:\n%s\nwant (spaces aside)\n%s", out, want)
	}
	if strings.Contains(out, bob) {
		t.Errorf("alice's q shows bob's jobs:\n%s", out)
	}
	for _, args := range [][]string{{"q", "-allusers"}, {"q", bob}} {
		if out := tool(alice, args...); !strings.Contains(out, bob+" ID: "+fmt.Sprint(theirs)) || strings.Contains(args[1], "bob") && strings.Contains(out, alice) {
			t.Errorf("%v as alice:\n%s", args, out)
		}
	}
	if out := h.must(t, "q"); !strings.Contains(out, bob) || !strings.Contains(out, alice) {
		t.Errorf("root's q does not show everyone's jobs:\n%s", out)
	}
	// An agent with an embedded queue has no other agents' jobs to list.
	if out, code := h.tool(t, alice, "q", "-global"); code == 0 || !strings.Contains(out, "QUEUE_STORE = postgres") {
		t.Errorf("q -global on an agent with an embedded queue: exit %d: %s", code, out)
	}

	if rows := fields(tool(alice, "q", "-nobatch")); len(rows) != 6 || rows[0][0] != "ID" || rows[1][0] != fmt.Sprintf("%d.2", sweep) {
		t.Errorf("q -nobatch: %v", rows)
	}
	out = tool(alice, "q", "-hold")
	if rows := fields(out); len(rows) != 4 || rows[1][0] != fmt.Sprintf("%d.2", sweep) || rows[1][4] != "15/0" ||
		!strings.Contains(out, "HOLD_REASON") || !strings.Contains(out, "submitted on hold") {
		t.Errorf("q -hold:\n%s", out)
	}
	out = tool(alice, "q", "-run")
	if rows := fields(out); len(rows) != 2 || rows[1][0] != fmt.Sprintf("%d.0", sleeps) || !strings.Contains(rows[1][len(rows[1])-1], "@") {
		t.Errorf("q -run:\n%s", out)
	}
	if rows := fields(tool(alice, "q", "-idle")); len(rows) != 4 || rows[1][0] != fmt.Sprintf("%d.1", sleeps) || rows[1][5] != "I" {
		t.Errorf("q -idle: %v", rows)
	}
	out = date.ReplaceAllString(tool(alice, "q", "-hold-codes"), "DATE")
	if rows := fields(out); len(rows) != 4 || strings.Join(rows[1][:4], " ") != alice+" 15/0 1 DATE" || !strings.Contains(out, "submitted on hold") {
		t.Errorf("q -hold-codes:\n%s", out)
	}
	for _, args := range [][]string{{"-cputime"}, {"-currentrun", "-nobatch"}, {"-run", "-cputime"}} {
		head := map[bool]string{true: "CPU_TIME", false: "RUN_TIME"}[args[len(args)-1] == "-cputime"]
		if out := tool(alice, append([]string{"q"}, args...)...); !strings.Contains(strings.SplitN(out, "\n", 2)[0], head) {
			t.Errorf("q %v, want a %s column:\n%s", args, head, out)
		}
	}
	out = tool(alice, "q", "-long", "-attributes", "Owner,JobStatus")
	if ads := parseAds(t, out); len(ads) != 3 || len(ads[0].Names()) != 2 {
		t.Errorf("q -long -attributes Owner,JobStatus:\n%s", out)
	}
	if out := tool(alice, "q", "-totals"); out != "Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, 1 held, 0 suspended\n" {
		t.Errorf("q -totals: %q", out)
	}
	out = tool(alice, "q", "-af:jh", "Owner", "JobStatus", "-nobatch")
	if rows := fields(out); len(rows) != 4 || strings.Join(rows[0], " ") != "ID Owner JobStatus" ||
		strings.Join(rows[1], " ") != fmt.Sprintf("%d.2 %s 5", sweep, alice) {
		t.Errorf("q -af:jh:\n%s", out)
	}
	if out, code := h.tool(t, alice, "q", "-af:x", "Owner"); code != 2 || !strings.Contains(out, "-af:x") {
		t.Errorf("q -af:x: exit %d: %s", code, out)
	}
}

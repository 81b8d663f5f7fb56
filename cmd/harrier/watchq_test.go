package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestWatchQ: harrier watch-q follows the caller's batch on a real pool
// until -exit all,done holds, its last view showing every job done; it
// tracks another user's jobs when asked, exits with the status an -exit
// condition gives, and exits at once when there is nothing to track.
func TestWatchQ(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	out, code := h.tool(t, alice, "submit", h.submitFile(t, "sweep.sub",
		"executable = /bin/sh\narguments = \"-c 'sleep 1'\"\nbatch_name = sweep\nqueue 3\n"))
	c := submitted(t, out, code)
	out, code = h.tool(t, bob, "submit", h.submitFile(t, "held.sub", "executable = /bin/true\nhold = true\nqueue\n"))
	theirs := submitted(t, out, code)

	out, code = h.tool(t, alice, "watch-q", "-exit", "all,done", "-interval", "0.5")
	views := strings.Split(strings.TrimSpace(out), "\n\n")
	want := regexp.MustCompile(fmt.Sprintf(`(?s)^BATCH +IDLE +RUN +DONE +TOTAL +JOB_IDS\n%s sweep +_ +_ +3 +3 +%d\.0-2\n\n`+
		`Total: 3 jobs; 3 done, 0 idle, 0 running, 0 held\nUpdated at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, alice, c))
	if code != 0 || len(views) < 2 || !want.MatchString(strings.Join(views[len(views)-2:], "\n\n")) || strings.Contains(out, bob) {
		t.Errorf("watch-q -exit all,done: exit %d:\n%s", code, out)
	}
	if out, code := h.tool(t, alice, "watch-q", "-users", bob, "-exit", "any,held,3", "-exit", "all,done,0"); code != 3 ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^%s ID: %d +_ +_ +1 +_ +1 +%d\.0$`, bob, theirs, theirs)).MatchString(out) {
		t.Errorf("watch-q -users bob -exit any,held,3: exit %d:\n%s", code, out)
	}
	if out, code := h.tool(t, alice, "watch-q"); code != 0 || out != "No jobs to track.\n" {
		t.Errorf("watch-q with no jobs: exit %d: %q", code, out)
	}
	if out, code := h.tool(t, alice, "watch-q", "-exit", "most,done"); code != 2 || !strings.Contains(out, "GROUPER is all, any or none") {
		t.Errorf("watch-q -exit most,done: exit %d: %s", code, out)
	}
}

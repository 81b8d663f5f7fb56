package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReservations: on a pool of hosts in network namespaces (a
// matchmaker's, a submit host's, two execute hosts') under the paper's
// Figure 5 policy (its VIP list naming the test's VIP), a VIP's
// reservation of both machines is granted and another user's refused with
// the policy's reason; only the administrator reserves for someone else
// or cancels another's reservation; the reservation survives a restart of
// the matchmaker. An ordinary job runs on a reserved machine before the
// window (backfill) and is vacated at its start; one that declares it
// would run into the window does not start; the reservation's job does
// not start before its window, runs in it, and is vacated at its end.
func TestReservations(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1", "exec2")
	vip, other := newUser(t), newUser(t)
	fig5, err := os.ReadFile(filepath.Join("..", "..", "reservation", "testdata", "figure5.ad"))
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(n.hosts["cm"].dir, "policy.ad")
	writeFile(t, policy, strings.Replace(string(fig5), `VIPs = {"userA", "userB", "userC"}`, fmt.Sprintf("VIPs = {%q}", vip.Username), 1), 0o644)
	// The submit host's root holds the administrator's certificate.
	roles := map[string]string{"cm": "matchmaker", "submit": "agent,admin", "exec1": "startd", "exec2": "startd"}
	mmOf := map[string]string{}
	for name := range n.hosts {
		mmOf[name] = "cm"
	}
	n.configurePools(mmOf, roles, map[string]string{"cm": "NEGOTIATOR_INTERVAL = 2\nRESERVATION_POLICY_FILE = " + policy})
	n.run(roles)

	work := filepath.Join(n.hosts["submit"].dir, "work")
	writeFile(t, filepath.Join(work, "sleep.sh"), "#!/bin/sh\nsleep 600\n", 0o755)
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	as := func(u *user.User, args ...string) (string, int) {
		t.Helper()
		return n.as(u, args...)
	}

	start := time.Now().Add(45 * time.Second).Truncate(time.Second)
	end := start.Add(40 * time.Second)
	window := []string{"reserve", "--nodes", "2", "--start", fmt.Sprint(start.Unix()), "--end", end.UTC().Format(time.RFC3339)}

	out, code := as(other, window...)
	if code == 0 || !strings.Contains(out, "Reservation refused") || !strings.Contains(out, "grants 1") {
		t.Fatalf("a low-priority user's request for the whole pool: exit %d: %s", code, out)
	}
	out, code = as(other, append(window, "--user", vip.Username)...)
	if code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Fatalf("reserving for another user: exit %d: %s", code, out)
	}
	out, code = as(vip, window...)
	m := regexp.MustCompile(`Reservation (rsv\d+) granted to ` + vip.Username + `: 2 machine`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("the VIP's request: exit %d: %s", code, out)
	}
	id := m[1]
	if out, code := as(other, "reserve", "-cancel", id); code == 0 || !strings.Contains(out, "permission denied") && !strings.Contains(out, "only its owner") {
		t.Fatalf("another user cancels it: exit %d: %s", code, out)
	}

	submit := func(u *user.User, name, extra string) string {
		t.Helper()
		path := filepath.Join(work, name)
		writeFile(t, path, "executable = sleep.sh\n"+extra+"queue\n", 0o644)
		out, code := as(u, "submit", path)
		if code != 0 {
			t.Fatalf("submit %s as %s: exit %d: %s", name, u.Username, code, out)
		}
		var cluster int
		if _, err := fmt.Sscanf(out[strings.Index(out, "cluster"):], "cluster %d.", &cluster); err != nil {
			t.Fatalf("submit %s: %q: %v", name, out, err)
		}
		return fmt.Sprintf("%d.0", cluster)
	}
	backfill := submit(other, "backfill.sub", "")
	eventually(t, 60*time.Second, "the ordinary job to run before the window", func() bool { return n.status(backfill) == 2 })
	long := submit(other, "long.sub", "+EstimatedRunTime = 3600\n")
	reserved := submit(vip, "reserved.sub", fmt.Sprintf("+ReservationId = %q\n", id))

	n.restartMatchmaker(t)
	eventually(t, 30*time.Second, "the restarted matchmaker to list the reservation", func() bool {
		out, code := as(vip, "reserve", "-list")
		return code == 0 && strings.Contains(out, id) && strings.Contains(out, vip.Username)
	})
	// Until the window starts the free machine takes neither the job that
	// would run into it nor the reservation's job.
	for time.Until(start) > 3*time.Second {
		if s := n.status(reserved); s != 1 {
			t.Fatalf("the reservation's job is in state %d before its window", s)
		}
		if s := n.status(long); s != 1 {
			t.Fatalf("the job that declares an hour's run is in state %d before the window", s)
		}
		time.Sleep(time.Second)
	}

	eventually(t, 90*time.Second, "the ordinary job to be vacated at the window's start", func() bool { return n.status(backfill) == 1 })
	eventually(t, 90*time.Second, "the reservation's job to run in its window", func() bool { return n.status(reserved) == 2 })
	if time.Now().Before(start) {
		t.Fatal("the window's effects came before its start")
	}
	eventually(t, 120*time.Second, "the reservation's job to be vacated at the window's end", func() bool {
		return time.Now().After(end) && n.status(reserved) == 1
	})
	out, _ = n.tool("submit", "q", "-allusers", "-af", "NumJobStarts", reserved)
	if starts, _ := strconv.Atoi(strings.TrimSpace(out)); starts < 1 {
		t.Errorf("the reservation's job after its window has NumJobStarts %q", out)
	}

	// The administrator cancels a user's reservation.
	later := time.Now().Add(time.Hour)
	out, code = as(vip, "reserve", "--nodes", "1", "--start", later.Format("2006-01-02T15:04:05"), "--end", later.Add(time.Hour).Format("2006-01-02T15:04:05"))
	m = regexp.MustCompile(`Reservation (rsv\d+) granted`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("the VIP's second request: exit %d: %s", code, out)
	}
	if out, code := n.tool("submit", "reserve", "-cancel", m[1]); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("the administrator's cancel: exit %d: %s", code, out)
	}
}

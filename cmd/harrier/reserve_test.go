package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReservations: on a pool of two machines under the paper's Figure 5
// policy (its VIP list naming the test's VIP), a VIP's reservation of
// both machines is granted and another user's refused with the policy's
// reason; only the administrator reserves for someone else or cancels
// another's reservation; the reservation survives a restart of the
// matchmaker. An ordinary job runs on a reserved machine before the
// window (backfill) and is vacated at its start; one that declares it
// would run into the window does not start; the reservation's job does
// not start before its window, runs in it, and is vacated at its end.
func TestReservations(t *testing.T) {
	needPool(t)
	vip, other := newUser(t).Username, newUser(t).Username
	fig5, err := os.ReadFile(filepath.Join("..", "..", "reservation", "testdata", "figure5.ad"))
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.ad")
	writeFile(t, policy, strings.Replace(string(fig5), `VIPs = {"userA", "userB", "userC"}`, fmt.Sprintf("VIPs = {%q}", vip), 1), 0o644)
	bin := publicBinary(t)
	h := &hostile{testPool: startPoolFrom(t, bin, 2, "NEGOTIATOR_INTERVAL = 2\nRESERVATION_POLICY_FILE = "+policy), bin: bin, dir: t.TempDir()}
	if err := os.Chmod(h.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "both machines to be advertised", func() bool { return len(h.slotStates(t)) == 2 })

	start := time.Now().Add(45 * time.Second).Truncate(time.Second)
	end := start.Add(40 * time.Second)
	window := []string{"reserve", "--nodes", "2", "--start", fmt.Sprint(start.Unix()), "--end", end.UTC().Format(time.RFC3339)}

	out, code := h.tool(t, other, window...)
	if code == 0 || !strings.Contains(out, "Reservation refused") || !strings.Contains(out, "grants 1") {
		t.Fatalf("a low-priority user's request for the whole pool: exit %d: %s", code, out)
	}
	out, code = h.tool(t, other, append(window, "--user", vip)...)
	if code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Fatalf("reserving for another user: exit %d: %s", code, out)
	}
	out, code = h.tool(t, vip, window...)
	m := regexp.MustCompile(`Reservation (rsv\d+) granted to ` + vip + `: 2 machine`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("the VIP's request: exit %d: %s", code, out)
	}
	id := m[1]
	if out, code := h.tool(t, other, "reserve", "-cancel", id); code == 0 || !strings.Contains(out, "permission denied") && !strings.Contains(out, "only its owner") {
		t.Fatalf("another user cancels it: exit %d: %s", code, out)
	}

	writeFile(t, filepath.Join(h.dir, "sleep.sh"), "#!/bin/sh\nsleep 600\n", 0o755)
	submit := func(user, name, extra string) string {
		t.Helper()
		out, code := h.tool(t, user, "submit", h.submitFile(t, name, "executable = sleep.sh\n"+extra+"queue\n"))
		return fmt.Sprintf("%d.0", submitted(t, out, code))
	}
	backfill := submit(other, "backfill.sub", "")
	eventually(t, 60*time.Second, "the ordinary job to run before the window", func() bool { return h.jobStatus(t, backfill) == 2 })
	long := submit(other, "long.sub", "+EstimatedRunTime = 3600\n")
	reserved := submit(vip, "reserved.sub", fmt.Sprintf("+ReservationId = %q\n", id))

	h.killDaemon(t, "matchmaker")
	eventually(t, 30*time.Second, "the restarted matchmaker to list the reservation", func() bool {
		out, code := h.tool(t, vip, "reserve", "-list")
		return code == 0 && strings.Contains(out, id) && strings.Contains(out, vip)
	})
	// Until the window starts the free machine takes neither the job that
	// would run into it nor the reservation's job.
	for time.Until(start) > 3*time.Second {
		if s := h.jobStatus(t, reserved); s != 1 {
			t.Fatalf("the reservation's job is in state %d before its window", s)
		}
		if s := h.jobStatus(t, long); s != 1 {
			t.Fatalf("the job that declares an hour's run is in state %d before the window", s)
		}
		time.Sleep(time.Second)
	}

	eventually(t, 90*time.Second, "the ordinary job to be vacated at the window's start", func() bool { return h.jobStatus(t, backfill) == 1 })
	eventually(t, 90*time.Second, "the reservation's job to run in its window", func() bool { return h.jobStatus(t, reserved) == 2 })
	if time.Now().Before(start) {
		t.Fatal("the window's effects came before its start")
	}
	eventually(t, 120*time.Second, "the reservation's job to be vacated at the window's end", func() bool {
		return time.Now().After(end) && h.jobStatus(t, reserved) == 1
	})
	if ads := h.jobs(t, "q", reserved); len(ads) != 1 || ads[0]["NumJobStarts"] == 0.0 {
		t.Errorf("the reservation's job after its window: %v", ads)
	}

	// The administrator cancels a user's reservation.
	later := time.Now().Add(time.Hour)
	out, code = h.tool(t, vip, "reserve", "--nodes", "1", "--start", later.Format("2006-01-02T15:04:05"), "--end", later.Add(time.Hour).Format("2006-01-02T15:04:05"))
	m = regexp.MustCompile(`Reservation (rsv\d+) granted`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("the VIP's second request: exit %d: %s", code, out)
	}
	if out := h.must(t, "reserve", "-cancel", m[1]); !strings.Contains(out, "cancelled") {
		t.Fatalf("the administrator's cancel: %s", out)
	}
}

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStatusViews: harrier status on a real pool of two machines, one
// running a job: -avail lists only the free slot, -total only the summary
// by platform and state, -compact one line per machine with its state
// letters, -af:h the chosen values under a heading.
func TestStatusViews(t *testing.T) {
	p := startPool(t, 2)
	eventually(t, 30*time.Second, "both slots to be advertised", func() bool {
		return strings.Count(p.must(t, "status", "-af", "Name"), "\n") == 2
	})
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 300\nqueue\n")
	eventually(t, 30*time.Second, "a slot to be claimed and busy", func() bool {
		return strings.Contains(p.must(t, "status", "-af", "State", "Activity"), "Claimed Busy")
	})
	var busy, free string
	for _, l := range strings.Split(strings.TrimSpace(p.must(t, "status", "-af", "Machine", "State")), "\n") {
		if f := strings.Fields(l); f[1] == "Claimed" {
			busy = f[0]
		} else {
			free = f[0]
		}
	}

	out := p.must(t, "status", "-avail")
	if rows := fields(out); len(rows) != 6 || !strings.Contains(rows[1][0], "@"+free) {
		t.Errorf("status -avail, want only the slot of %s:\n%s", free, out)
	}
	for _, args := range [][]string{{"-claimed"}, {busy}, {"-limit", "1", "-constraint", `State == "Claimed"`}} {
		out := p.must(t, append([]string{"status"}, args...)...)
		if rows := fields(out); len(rows) != 6 || !strings.Contains(rows[1][0], "@"+busy) {
			t.Errorf("status %v, want only the slot of %s:\n%s", args, busy, out)
		}
	}
	if rows := fields(p.must(t, "status", "-limit", "1")); len(rows) != 6 {
		t.Errorf("status -limit 1: %v", rows)
	}
	out = p.must(t, "status", "-totals")
	want := "Total Owner Claimed Unclaimed Matched Preempting Drained\nX86_64/LINUX 2 0 1 1 0 0 0\nTotal 2 0 1 1 0 0 0"
	var got []string
	for _, row := range fields(out) {
		got = append(got, strings.Join(row, " "))
	}
	if strings.Join(got, "\n") != want {
		t.Errorf("status -total:\n%s\nwant (spaces aside)\n%s", out, want)
	}
	out = p.must(t, "status", "-compact")
	for _, re := range []string{
		`(?m)^Machine +Platform +Slots +Cpus +TotalGb +FreCpu +FreeGb +CpuLoad +ST$`,
		`(?m)^` + regexp.QuoteMeta(busy) + ` +X86_64/LINUX +1 +\d+ +[\d.]+ +0 +0\.00 +[\d.]+ +Cb$`,
		`(?m)^` + regexp.QuoteMeta(free) + ` +X86_64/LINUX +1 +\d+ +[\d.]+ +[1-9]\d* +[\d.]+ +[\d.]+ +Ui$`,
		`(?m)^ +Total +2 +0 +1 +1 +0 +0 +0$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status -compact lacks %s:\n%s", re, out)
		}
	}
	if rows := fields(p.must(t, "status", "-af:h", "Machine", "State", "-constraint", `State == "Claimed"`)); len(rows) != 2 ||
		strings.Join(rows[0], " ") != "Machine State" || strings.Join(rows[1], " ") != busy+" Claimed" {
		t.Errorf("status -af:h: %v", rows)
	}
	for sort, want := range map[string]string{"State": busy + "\n" + free + "\n", `State == "Claimed"`: free + "\n" + busy + "\n"} {
		if out := p.must(t, "status", "-af", "Machine", "-sort", sort); out != want {
			t.Errorf("status -sort %s: %q, want %q", sort, out, want)
		}
	}
	if ads := parseAds(t, p.must(t, "status", "-long", "-attributes", "Name")); len(ads) != 2 || len(ads[0].Names()) != 1 {
		t.Errorf("status -long -attributes Name: %d ads", len(ads))
	}
	out = p.must(t, "status", "-run")
	if rows := fields(out); len(rows) != 6 || strings.Join(rows[0], " ") != "Name OpSys Arch LoadAv RemoteUser ClientMachine JobId" ||
		!strings.Contains(rows[1][0], "@"+busy) || rows[1][4] != "root" {
		t.Errorf("status -run:\n%s", out)
	}
	out = p.must(t, "status", "-state")
	if rows := fields(out); len(rows) != 7 || strings.Join(rows[0], " ") != "Name Cpu Mem LoadAv KbdIdle State StateTime Activ ActvtyTime" {
		t.Errorf("status -state:\n%s", out)
	}
	eventually(t, 30*time.Second, "the agent to advertise its running job", func() bool {
		rows := fields(p.must(t, "status", "-schedd"))
		return len(rows) == 4 && strings.Join(rows[0], " ") == "Name RunningJobs IdleJobs HeldJobs" &&
			strings.Join(rows[1][1:], " ") == "1 0 0" && len(rows[2]) == 0 && strings.Join(rows[3], " ") == "Total 1 0 0"
	})
	if out, code := p.harrier(t, "status", "-af:j", "Name"); code != 2 || !strings.Contains(out, "no job id") {
		t.Errorf("status -af:j: exit %d: %s", code, out)
	}
}

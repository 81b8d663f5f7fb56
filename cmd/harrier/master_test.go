package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Each daemon kind is killed with SIGKILL in turn while jobs run: its
// master starts it again, and every job completes exactly once. A master
// killed with SIGKILL takes its daemons with it, and pool up brings the
// host back instead of refusing; pool down leaves nothing running.
func TestMasterKeepsThePoolRunning(t *testing.T) {
	p := startPoolWith(t, 2, "NUM_SLOTS = 2")
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	const jobs = 4
	c := p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 15\nlog = sleep.log\nqueue "+fmt.Sprint(jobs)+"\n")
	eventually(t, 60*time.Second, "the jobs to run", func() bool {
		return strings.Count(p.must(t, "q", "-nobatch", "-af", "JobStatus"), "2") == jobs
	})
	host := hostName()
	for _, name := range []string{"matchmaker", "agent", host + "-2"} {
		p.killDaemon(t, name)
		t.Logf("%s killed and restarted", name)
	}
	eventually(t, 5*time.Minute, "every job to complete", func() bool {
		out, code := p.harrier(t, "q", "-nobatch", "-af", "ClusterId")
		return code == 0 && strings.TrimSpace(out) == ""
	})
	log, err := os.ReadFile(filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	for proc := range jobs {
		id := fmt.Sprintf("005 (%03d.%03d.000)", c, proc)
		if n := strings.Count(string(log), id); n != 1 {
			t.Errorf("job %d.%d: %d completion events, want 1\n%s", c, proc, n, log)
		}
	}
	if n := strings.Count(p.must(t, "history", "-af", "ClusterId"), fmt.Sprint(c)); n != jobs {
		t.Errorf("%d jobs in the history, want %d", n, jobs)
	}
	masterLog, _ := os.ReadFile(filepath.Join(p.dir, "log", "master."+host+"-1.log"))
	if !strings.Contains(string(masterLog), "name=agent") || !strings.Contains(string(masterLog), `why="killed by killed"`) {
		t.Errorf("the master's log does not say the agent was killed:\n%s", masterLog)
	}

	// A dead master: its startd goes too, and pool up repairs the host.
	masterPid := readPid(masterPidFile(p.dir, host+"-2"))
	startdPid := readPid(filepath.Join(p.dir, "run", host+"-2.pid"))
	if err := syscall.Kill(masterPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the startd to follow its master", func() bool { return !alive(startdPid) })
	out := p.must(t, "pool", "up", "--dir", p.dir, "--startds", "2", "--detach")
	if strings.Contains(out, "already up") {
		t.Errorf("pool up with a dead master: %s", out)
	}
	if pid := readPid(masterPidFile(p.dir, host+"-2")); pid == masterPid || !alive(pid) {
		t.Errorf("no new master for %s-2", host)
	}
	if out := p.must(t, "pool", "up", "--dir", p.dir, "--startds", "2", "--detach"); !strings.Contains(out, "already up") {
		t.Errorf("pool up on a whole pool: %s", out)
	}

	p.must(t, "pool", "down", "--dir", p.dir)
	if left := poolProcesses(p.dir); len(left) > 0 {
		t.Errorf("still running after pool down: %v", left)
	}
}

// poolProcesses lists the processes whose command line names the pool's
// directory (its masters and daemons do, through --config).
func poolProcesses(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), dir+"/") {
			continue
		}
		if exited(atoi(e.Name())) {
			continue
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// User priorities, and factors the administrator set, survive a
// matchmaker killed with SIGKILL: users keep their order. Only the
// administrator may set a factor.
func TestMatchmakerRestartKeepsPriorities(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2\nPRIORITY_HALFLIFE = 60\nNEGOTIATOR_INTERVAL = 2")
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	alice, bob := newUser(t), newUser(t)
	env := append([]string{asHarrier + "=1"}, p.env...)
	for _, u := range []string{alice.Username, bob.Username} {
		sub := filepath.Join(dir, u+".sub")
		writeFile(t, sub, "executable = /bin/sleep\narguments = 10\nqueue\n", 0o644)
		if out, code := asUser(t, bin, u, env, "submit", sub); code != 0 {
			t.Fatalf("submit as %s: %s", u, out)
		}
	}
	if out, code := asUser(t, bin, alice.Username, env, "userprio", "-setfactor", alice.Username, "0.1"); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user set her own priority factor: exit %d: %s", code, out)
	}
	p.must(t, "userprio", "-setfactor", bob.Username, "7")

	type prio struct {
		Name                                          string
		Priority, RealPriority, PriorityFactor, Usage float64
	}
	// users returns alice's and bob's records, best priority first; none
	// while the matchmaker cannot be asked (it is restarting).
	users := func() []prio {
		out, code := p.harrier(t, "userprio", "-json")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil {
			return nil
		}
		var got []prio
		for _, ad := range ads {
			name, _ := ad["Name"].(string)
			eff, _ := ad["Priority"].(float64)
			real, _ := ad["RealPriority"].(float64)
			f, _ := ad["PriorityFactor"].(float64)
			usage, _ := ad["AccumulatedUsage"].(float64)
			if name == alice.Username || name == bob.Username {
				got = append(got, prio{name, eff, real, f, usage})
			}
		}
		slices.SortFunc(got, func(a, b prio) int { return cmp.Compare(a.Priority, b.Priority) })
		return got
	}
	var before []prio
	eventually(t, 2*time.Minute, "both users to have used the pool", func() bool {
		out, _ := p.harrier(t, "q", "-allusers", "-nobatch", "-af", "ClusterId")
		before = users()
		return strings.TrimSpace(out) == "" && len(before) == 2 && before[0].Usage > 0 && before[1].Usage > 0
	})
	if before[1].Name != bob.Username || before[1].PriorityFactor != 7 {
		t.Fatalf("before the restart: %+v, want bob last with factor 7", before)
	}
	// The matchmaker saves its accountant every few seconds: wait for a
	// save of what was just read, then kill it.
	sampled := time.Now()
	eventually(t, time.Minute, "the accountant to be saved", func() bool {
		fi, err := os.Stat(filepath.Join(p.dir, "spool", "accountant.json"))
		return err == nil && fi.ModTime().After(sampled)
	})
	p.killDaemon(t, "matchmaker")
	var after []prio
	eventually(t, time.Minute, "the restarted matchmaker to publish priorities", func() bool {
		after = users()
		return len(after) == 2
	})
	// The Negotiator ad goes on from the cycles before the restart: the
	// restarted matchmaker's first cycle is 0, its predecessor's last 1.
	if out := p.must(t, "status", "-negotiator", "-af", "LastNegotiationCycleTime1"); strings.TrimSpace(out) == "" || strings.Contains(out, "undefined") {
		t.Errorf("after the restart the Negotiator ad has no earlier cycle: %q", out)
	}
	for i := range before {
		// Usage only grows; a real priority only decays while nothing runs.
		if after[i].Name != before[i].Name || after[i].PriorityFactor != before[i].PriorityFactor ||
			after[i].Usage < before[i].Usage || after[i].RealPriority > before[i].RealPriority {
			t.Errorf("user %d: %+v before the restart, %+v after", i, before[i], after[i])
		}
	}
}

// Across hosts, a master per host: each daemon kind is killed with
// SIGKILL in turn while jobs run, its master starts it again, and every
// job completes exactly once.
func TestMastersAcrossHosts(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1", "exec2")
	roles := map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd", "exec2": "startd"}
	n.configure("cm", roles)
	for _, h := range []string{"cm", "submit", "exec1", "exec2"} {
		n.master(h, roles[h])
	}
	n.waitForSlots("submit", "slot1@exec1", "slot1@exec2")

	work := filepath.Join(n.hosts["submit"].dir, "work")
	writeFile(t, filepath.Join(work, "sleep.sub"), "executable = /bin/sleep\narguments = 15\nlog = sleep.log\nqueue 4\n", 0o644)
	if out, code := n.tool("submit", "submit", filepath.Join(work, "sleep.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	eventually(t, time.Minute, "two jobs to run", func() bool {
		out, _ := n.tool("submit", "q", "-nobatch", "-af", "JobStatus")
		return strings.Count(out, "2") == 2
	})
	for _, kill := range []struct{ host, daemon string }{{"cm", "matchmaker"}, {"submit", "agent"}, {"exec1", "exec1"}} {
		pidFile := filepath.Join(n.hosts[kill.host].dir, "run", kill.daemon+".pid")
		pid := readPid(pidFile)
		if pid <= 0 || !alive(pid) {
			t.Fatalf("%s on %s is not running", kill.daemon, kill.host)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		eventually(t, 30*time.Second, "the master to restart "+kill.daemon, func() bool {
			now := readPid(pidFile)
			return now > 0 && now != pid && alive(now)
		})
		t.Logf("%s on %s restarted %.1f s after SIGKILL", kill.daemon, kill.host, time.Since(killed).Seconds())
	}
	eventually(t, 5*time.Minute, "every job to complete", func() bool {
		out, code := n.tool("submit", "q", "-nobatch", "-af", "ClusterId")
		return code == 0 && strings.TrimSpace(out) == ""
	})
	log, err := os.ReadFile(filepath.Join(work, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	for proc := range 4 {
		if c := strings.Count(string(log), fmt.Sprintf("005 (001.%03d.000)", proc)); c != 1 {
			t.Errorf("job 1.%d: %d completion events, want 1\n%s", proc, c, log)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	if !strings.Contains(string(masterLog), "daemon=agent") || !strings.Contains(string(masterLog), `why="killed by killed"`) {
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

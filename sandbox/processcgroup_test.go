package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestProcessCgroup: a job started in the slot's cgroup, and what it
// left running in a session of its own, end with Kill, job after job in
// the same cgroup; KillProcesses and Cleanup end what a job left there
// that nobody killed.
func TestProcessCgroup(t *testing.T) {
	root := t.TempDir()
	cgroups, err := NewProcessCgroups(root, "slot1")
	if err != nil {
		t.Skipf("no cgroups for plain processes here: %v", err)
	}
	t.Cleanup(func() { _ = Cleanup(root, "slot1") })
	start := func() (*ProcessCgroup, int) {
		t.Helper()
		c, err := cgroups.Open()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", "setsid sleep 999 </dev/null >/dev/null 2>&1 & echo $!")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: c.FD(), Setpgid: true}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the job in its cgroup: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		return c, pid
	}
	alive := func(pid int) bool {
		// A zombie is gone, but for its parent's wait.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && !strings.Contains(string(b), ") Z ")
	}
	var first string
	for range 3 {
		c, pid := start()
		if !alive(pid) {
			t.Fatal("the job's daemon did not start")
		}
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		if alive(pid) {
			t.Errorf("the job's daemon %d outlived Kill", pid)
		}
		if first == "" {
			first = c.path
		}
		if c.path != first {
			t.Errorf("the slot's next job is in %s, not in the slot's cgroup %s", c.path, first)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A starter that died left its job's daemon: the startd's
	// KillProcesses ends it, and so does Cleanup.
	for _, kill := range []func(string, string) error{KillProcesses, Cleanup} {
		_, pid := start()
		if err := kill(root, "slot1"); err != nil {
			t.Fatal(err)
		}
		if alive(pid) {
			t.Errorf("the daemon %d a dead starter's job left outlived its slot's cleanup", pid)
		}
	}
}

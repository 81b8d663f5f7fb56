package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestProcessCgroup: a job started in its cgroup, and what it left
// running in a session of its own, end with Kill; the next job of the
// slot starts in a cgroup of its own, and Cleanup ends what a job left
// in one nobody killed.
func TestProcessCgroup(t *testing.T) {
	if err := ProcessCgroups(); err != nil {
		t.Skipf("no cgroups for plain processes here: %v", err)
	}
	root := t.TempDir()
	t.Cleanup(func() { _ = Cleanup(root, "slot1") })
	start := func() (*ProcessCgroup, int) {
		t.Helper()
		c, err := NewProcessCgroup(root, "slot1")
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
	for range 2 {
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
		path := c.path
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the job's cgroup, killed, is still there: %v", err)
		}
	}
	// A job that left nothing hands its cgroup on to the next.
	c, err := NewProcessCgroup(root, "slot1")
	if err != nil {
		t.Fatal(err)
	}
	job := exec.Command("true")
	job.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: c.FD()}
	if err := job.Run(); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(c.Kill(), c.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.path); err != nil {
		t.Errorf("the cgroup of a job that left nothing is gone: %v", err)
	}
	next, pid := start()
	if err := errors.Join(next.Kill(), next.Close()); err != nil {
		t.Fatal(err)
	}
	if next.path != c.path || alive(pid) {
		t.Errorf("the next job, in %s after %s, left %d running", next.path, c.path, pid)
	}
	// A starter that died left its job's daemon: Cleanup ends it.
	_, pid = start()
	if err := Cleanup(root, "slot1"); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("the daemon %d a dead starter's job left outlived Cleanup", pid)
	}
}

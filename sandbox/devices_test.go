package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
)

// fakeDevices makes n character device nodes in /dev that read as zeros
// (/dev/zero's numbers), removed at the end of the test.
func fakeDevices(t *testing.T, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := fmt.Sprintf("/dev/harrier-test-gpu-%d-%d", os.Getpid(), i)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatalf("mknod %s: %v", p, err)
		}
		if err := os.Chmod(p, 0o666); err != nil { // past the umask
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		paths = append(paths, p)
	}
	return paths
}

// TestDevices gives a job one of two device nodes: it reads its own, does
// not see the other, and is not checkpointed.
func TestDevices(t *testing.T) {
	r := testRunner(t, nil)
	devs := fakeDevices(t, 2)
	script := fmt.Sprintf(`head -c 4 %s | wc -c | sed 's/^/own /'; ls /dev | grep -c harrier-test-gpu | sed 's/^/seen /'; test -e %s && echo other; true`,
		devs[0], devs[1])
	res := runJob(t, r, script, func(task *Task) { task.Devices = devs[:1] })
	if res.exit.Code != 0 {
		t.Fatalf("exit %+v, stderr %s", res.exit, res.stderr)
	}
	if want := "own 4\nseen 1\n"; res.stdout != want {
		t.Errorf("stdout %q, want %q (stderr %s)", res.stdout, want, res.stderr)
	}

	s := startJob(t, r, &Task{ID: "2.0", Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, Devices: devs[1:]})
	j := s.job
	_, err := j.Checkpoint(context.Background(), checkpoint.DumpOptions{ImageDir: filepath.Join(t.TempDir(), "img")})
	if !errors.Is(err, ErrGPUCheckpoint) {
		t.Errorf("checkpoint: %v, want ErrGPUCheckpoint", err)
	}
	_ = j.Signal(unix.SIGKILL)
	s.wait(t)
}

func TestDevicesRefused(t *testing.T) {
	if _, err := hostDevices([]string{"/etc/passwd"}); err == nil || !strings.Contains(err.Error(), "not a device") {
		t.Errorf("a plain file as a device: %v", err)
	}
	if _, err := hostDevices([]string{"/dev/no-such-harrier-device"}); err == nil {
		t.Error("a missing device accepted")
	}
}

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func init() {
	// As in cmd/harrier: the main thread must never be the one
	// libcontainer leaves in a container's mount namespace.
	runtime.LockOSThread()
	// The test binary doubles as the container's init.
	if IsInit() {
		Init()
	}
}

// needContainers skips a test where containers cannot run, saying why.
func needContainers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root: runs containers in cgroups (not in -short)")
	}
	if err := Available(); err != nil {
		t.Skipf("containers not available: %v (CI runs as root with cgroups)", err)
	}
}

// testRunner returns a runner for a fresh slot and removes whatever the
// slot leaves when the test ends.
func testRunner(t testing.TB, mod func(*Config)) *Runner {
	t.Helper()
	needContainers(t)
	root := t.TempDir()
	cfg := Config{StateRoot: root, Slot: "slot1"}
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := CleanupAll(root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if cgroupExists(cgroupBase(root)) {
			t.Errorf("cgroup %s left behind", cgroupBase(root))
		}
	})
	return r
}

// result is a finished job: its exit and its output.
type result struct {
	exit           Exit
	stdout, stderr string
}

// started is a running job with its output being collected.
type started struct {
	job  *Job
	outs chan [2]string
}

// startJob starts a job whose stdout and stderr are collected.
func startJob(t testing.TB, r *Runner, task *Task) *started {
	t.Helper()
	if task.ScratchDir == "" {
		task.ScratchDir = t.TempDir()
		if err := os.Chmod(task.ScratchDir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if task.Dir == "" {
		task.Dir = task.ScratchDir
	}
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	task.Stdout, task.Stderr = outW, errW
	j, err := r.Start(context.Background(), task)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("start %s: %v", task.Path, err)
	}
	s := &started{job: j, outs: make(chan [2]string, 1)}
	go func() {
		var o, e bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&e, errR); close(done) }()
		io.Copy(&o, outR)
		<-done
		outR.Close()
		errR.Close()
		s.outs <- [2]string{o.String(), e.String()}
	}()
	return s
}

// wait waits for a started job.
func (s *started) wait(t testing.TB) result {
	t.Helper()
	x, err := s.job.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	select {
	case out := <-s.outs:
		return result{exit: x, stdout: out[0], stderr: out[1]}
	case <-time.After(30 * time.Second):
		t.Fatal("job output still open after the job ended")
	}
	return result{}
}

// waited is the end of a job waited for by waitAsync.
type waited struct {
	result
	err error
}

// waitAsync waits for the job in the background, as a starter does.
func (s *started) waitAsync() <-chan waited {
	ch := make(chan waited, 1)
	go func() {
		x, err := s.job.Wait()
		w := waited{result: result{exit: x}, err: err}
		select {
		case out := <-s.outs:
			w.stdout, w.stderr = out[0], out[1]
		case <-time.After(30 * time.Second):
			w.err = errors.Join(err, errors.New("job output still open after the job ended"))
		}
		ch <- w
	}()
	return ch
}

// runJob runs a shell script as a job and waits for it.
func runJob(t testing.TB, r *Runner, script string, mod func(*Task)) result {
	t.Helper()
	task := &Task{ID: "1.0", Path: "/bin/sh", Args: []string{"-c", script}}
	if mod != nil {
		mod(task)
	}
	return startJob(t, r, task).wait(t)
}

func pipe(t testing.TB) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// cgroupExists reports whether the cgroup at path exists in some
// hierarchy.
func cgroupExists(path string) bool {
	roots, err := hierarchies()
	if err != nil {
		return false
	}
	for _, root := range roots {
		if _, err := os.Stat(filepath.Join(root, path)); err == nil {
			return true
		}
	}
	return false
}

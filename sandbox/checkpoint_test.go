package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
)

// countScript counts into count.txt in its working directory, a number
// every 0.1 s.
const countScript = "#!/bin/sh\ni=0; while :; do i=$((i+1)); echo $i >> count.txt; sleep 0.1; done\n"

// waitCounted waits until path holds more than n numbers and returns
// them. The bound only keeps a stuck job from holding the test until go
// test's own timeout.
func waitCounted(t *testing.T, path string, n int) []int {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		var got []int
		for _, f := range strings.Fields(string(b)) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s holds %q", path, f)
			}
			got = append(got, v)
		}
		if len(got) > n {
			return got
		}
	}
	t.Fatalf("%s does not count past %d", path, n)
	return nil
}

// TestCheckpointHops checkpoints a counting job, a shell script run from
// its scratch directory, and restores it three times, each time onto a
// scratch directory of its own, as on another machine, into a container
// made afresh: a restored job is checkpointed and restored again, which
// works only if nothing of its view depends on the machine. Its count,
// in a working directory of its own, goes on unbroken, and it runs as
// the slot user throughout. A job of a root slot user (where the
// administrator allows it), with the capabilities such a job has, makes
// one hop.
func TestCheckpointHops(t *testing.T) {
	if _, err := exec.LookPath("criu"); err != nil {
		t.Skip("no criu on PATH (scripts/setup installs it)")
	}
	t.Run("nobody", func(t *testing.T) { testCheckpointHops(t, testRunner(t, nil), 3) })
	t.Run("root", func(t *testing.T) {
		testCheckpointHops(t, testRunner(t, func(c *Config) { c.User, c.AllowRoot = "root", true }), 1)
	})
}

func testCheckpointHops(t *testing.T, r *Runner, hops int) {
	ctx := context.Background()
	work := t.TempDir()
	if err := os.Chown(work, r.user.uid, r.user.gid); err != nil {
		t.Fatal(err)
	}
	countFile := filepath.Join(work, "count.txt")
	key, err := checkpoint.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	seal := key.For("submit#5.0#1700000000", "alice")
	task := func() *Task {
		scratch := t.TempDir()
		if err := os.WriteFile(filepath.Join(scratch, "count.sh"), []byte(countScript), 0o755); err != nil {
			t.Fatal(err)
		}
		return &Task{ID: "5.0", Path: filepath.Join(scratch, "count.sh"), Dir: work, ScratchDir: scratch}
	}
	s := startJob(t, r, task())
	n := len(waitCounted(t, countFile, 3))
	for hop := 1; hop <= hops; hop++ {
		img := filepath.Join(t.TempDir(), "img")
		if _, err := s.job.Checkpoint(ctx, checkpoint.DumpOptions{ImageDir: img}); err != nil {
			_ = s.job.Signal(9)
			s.wait(t)
			t.Fatalf("checkpoint %d: %v", hop, err)
		}
		s.wait(t)
		var buf bytes.Buffer
		if _, err := checkpoint.Pack(&buf, img, seal); err != nil {
			t.Fatal(err)
		}
		received := img + ".received"
		if _, err := checkpoint.Unpack(&buf, received, seal); err != nil {
			t.Fatal(err)
		}
		s = restoreJob(t, r, task(), received)
		n = len(waitCounted(t, countFile, n+3))
		t.Logf("hop %d: counted to %d", hop, n)
	}
	pid := s.job.Pid()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", r.user.uid, r.user.uid, r.user.uid, r.user.uid); !strings.Contains(string(st), want) {
		t.Errorf("the restored job's credentials:\n%s", st)
	}
	_ = s.job.Signal(9)
	s.wait(t)
	for i, v := range waitCounted(t, countFile, 0) {
		if v != i+1 {
			t.Fatalf("count.txt breaks at line %d: %d", i+1, v)
		}
	}
}

// restoreJob restores the job in imageDir for task and collects its
// output, as startJob does for a fresh start.
func restoreJob(t *testing.T, r *Runner, task *Task, imageDir string) *started {
	t.Helper()
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	task.Stdout, task.Stderr = outW, errW
	j, _, err := r.Restore(context.Background(), task, imageDir)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("restore: %v", err)
	}
	s := &started{job: j, outs: make(chan [2]string, 1)}
	go func() {
		var o, e bytes.Buffer
		done := make(chan struct{})
		go func() { _, _ = e.ReadFrom(errR); close(done) }()
		_, _ = o.ReadFrom(outR)
		<-done
		outR.Close()
		errR.Close()
		s.outs <- [2]string{o.String(), e.String()}
	}()
	return s
}

// migrate checkpoints the job s, which counts into countFile (n numbers
// so far), and restores it as task, as on another machine; it returns the
// restored job once it counts on, and the dump's result.
func migrate(t *testing.T, r *Runner, s *started, task *Task, countFile string, n int) (*started, *checkpoint.Result) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	res, err := s.job.Checkpoint(context.Background(), checkpoint.DumpOptions{ImageDir: img})
	if err != nil {
		_ = s.job.Signal(9)
		s.wait(t)
		t.Fatalf("checkpoint: %v", err)
	}
	s.wait(t)
	s = restoreJob(t, r, task, img)
	waitCounted(t, countFile, n+3)
	return s, res
}

// readScript copies its input to count.txt a line at a time.
const readScript = "#!/bin/sh\nwhile read -r line; do echo $line >> count.txt; sleep 0.1; done\n"

// TestCheckpointReadingInput checkpoints a job whose standard input is a
// file the starter opened for it outside its container (HTCondor's
// input, fetched into the scratch directory and unlinked), which CRIU
// cannot find among the container's mounts, and restores it twice, each
// time with the input fetched and opened afresh: the job reads on from
// where it was, no line read twice or missed.
func TestCheckpointReadingInput(t *testing.T) {
	r := testRunner(t, nil)
	work := t.TempDir()
	if err := os.Chown(work, r.user.uid, r.user.gid); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintln(&lines, i)
	}
	task := func() *Task {
		scratch := t.TempDir()
		if err := os.WriteFile(filepath.Join(scratch, "read.sh"), []byte(readScript), 0o755); err != nil {
			t.Fatal(err)
		}
		// As the starter hands a job its input.
		in := filepath.Join(scratch, ".harrier_stdin")
		if err := os.WriteFile(in, []byte(lines.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		return &Task{ID: "8.0", Path: filepath.Join(scratch, "read.sh"), Dir: work, ScratchDir: scratch, Stdin: f}
	}
	countFile := filepath.Join(work, "count.txt")
	s := startJob(t, r, task())
	n := len(waitCounted(t, countFile, 3))
	for hop := 1; hop <= 2; hop++ {
		var res *checkpoint.Result
		s, res = migrate(t, r, s, task(), countFile, n)
		if res.Input == "" {
			t.Errorf("checkpoint %d recorded no input", hop)
		}
		n = len(waitCounted(t, countFile, 0))
		t.Logf("hop %d: read %d lines", hop, n)
	}
	_ = s.job.Signal(9)
	s.wait(t)
	for i, v := range waitCounted(t, countFile, 0) {
		if v != i+1 {
			t.Fatalf("count.txt breaks at line %d: %d", i+1, v)
		}
	}
}

// ghostScript holds open a removed file of 2.6 MB, larger than CRIU's
// default limit for such files, in the directory $1; asked to (a file
// "check" in its working directory) it counts the file's lines.
const ghostScript = `#!/bin/sh
exec 4<>"$1/ghost"
rm "$1/ghost"
seq 1 400000 >&4
i=0
while :; do
	i=$((i+1))
	echo $i >> count.txt
	if [ -e check ] && [ ! -e lines.txt ]; then
		wc -l < /proc/self/fd/4 > lines.txt
	fi
	sleep 0.1
done
`

// TestCheckpointRemovedFile checkpoints a job holding open a large file
// it removed (a temporary file, as Python's tempfile makes them), in its
// own /tmp and in its scratch directory, and restores it as on another
// machine: the file comes back whole.
func TestCheckpointRemovedFile(t *testing.T) {
	for _, dir := range []string{"/tmp", JobScratchDir} {
		t.Run(dir, func(t *testing.T) {
			r := testRunner(t, nil)
			work := t.TempDir()
			if err := os.Chown(work, r.user.uid, r.user.gid); err != nil {
				t.Fatal(err)
			}
			task := func() *Task {
				scratch := t.TempDir()
				if err := os.Chown(scratch, r.user.uid, r.user.gid); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(scratch, "ghost.sh"), []byte(ghostScript), 0o755); err != nil {
					t.Fatal(err)
				}
				return &Task{ID: "9.0", Path: filepath.Join(scratch, "ghost.sh"), Args: []string{dir}, Dir: work, ScratchDir: scratch}
			}
			countFile := filepath.Join(work, "count.txt")
			s := startJob(t, r, task())
			n := len(waitCounted(t, countFile, 3))
			s, _ = migrate(t, r, s, task(), countFile, n)
			defer func() {
				_ = s.job.Signal(9)
				s.wait(t)
			}()
			if err := os.WriteFile(filepath.Join(work, "check"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			got := filepath.Join(work, "lines.txt")
			for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if b, _ := os.ReadFile(got); strings.HasSuffix(string(b), "\n") {
					if strings.TrimSpace(string(b)) != "400000" {
						t.Errorf("the restored job's removed file has %s lines, want 400000", b)
					}
					return
				}
			}
			t.Fatal("the restored job did not count its removed file's lines")
		})
	}
}

// lockScript takes a lock of kind $1 (flock or lockf) on the file lock in
// its working directory and counts.
const lockScript = `import fcntl, sys, time
f = open("lock", "w")
if sys.argv[1] == "flock":
    fcntl.flock(f, fcntl.LOCK_EX)
else:
    fcntl.lockf(f, fcntl.LOCK_EX)
i = 0
while True:
    i += 1
    with open("count.txt", "a") as c:
        c.write("%d\n" % i)
    time.sleep(0.1)
`

// TestCheckpointFileLocks checkpoints a job holding a lock on a file, by
// flock(2) and by fcntl(2) (HDF5, SQLite and lock files take them), and
// restores it: the job holds its lock again.
func TestCheckpointFileLocks(t *testing.T) {
	// The container's PATH, not this process's.
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("the job is a python3 program (scripts/setup installs python3)")
	}
	for _, kind := range []string{"flock", "lockf"} {
		t.Run(kind, func(t *testing.T) {
			r := testRunner(t, nil)
			work := t.TempDir()
			if err := os.Chown(work, r.user.uid, r.user.gid); err != nil {
				t.Fatal(err)
			}
			task := func() *Task {
				scratch := t.TempDir()
				if err := os.WriteFile(filepath.Join(scratch, "lock.py"), []byte(lockScript), 0o644); err != nil {
					t.Fatal(err)
				}
				return &Task{ID: "10.0", Path: python, Args: []string{filepath.Join(JobScratchDir, "lock.py"), kind}, Dir: work, ScratchDir: scratch}
			}
			countFile := filepath.Join(work, "count.txt")
			s := startJob(t, r, task())
			n := len(waitCounted(t, countFile, 3))
			s, _ = migrate(t, r, s, task(), countFile, n)
			defer func() {
				_ = s.job.Signal(9)
				s.wait(t)
			}()
			f, err := os.OpenFile(filepath.Join(work, "lock"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if kind == "flock" {
				err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			} else {
				err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK})
			}
			if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
				t.Errorf("another process takes the lock the restored job should hold: %v", err)
			}
		})
	}
}

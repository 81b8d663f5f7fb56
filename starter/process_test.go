package starter_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/sandbox"
	"harrier.dev/harrier/starter"
)

// processRunner is a ProcessRunner as the startd makes one: as root, its
// jobs run as nobody.
func processRunner(t *testing.T) starter.ProcessRunner {
	t.Helper()
	if os.Geteuid() != 0 {
		return starter.ProcessRunner{}
	}
	nobody, err := asuser.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	return starter.ProcessRunner{User: &nobody}
}

// scratchDir is a scratch directory another user can reach, as the
// execute directory's are.
func scratchDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "scratch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runProcess starts script with ProcessRunner and returns the job and a
// channel that yields its standard output once it is closed.
func runProcess(t *testing.T, script string) (starter.Job, <-chan string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dir := scratchDir(t)
	task := &starter.Task{ID: "1.0", Path: "/bin/sh", Args: []string{"-c", script}, Dir: dir, ScratchDir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "GREETING=hello"}, Stdout: w, Stderr: w}
	job, err := processRunner(t).Start(context.Background(), task)
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		defer r.Close()
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	return job, out
}

func TestProcessRunnerExit(t *testing.T) {
	job, out := runProcess(t, `echo "$GREETING from $(pwd)"; exit 7`)
	if job.Pid() <= 0 {
		t.Errorf("pid %d", job.Pid())
	}
	x, err := job.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if x.Code != 7 || x.Signal != 0 {
		t.Errorf("exit %+v, want code 7", x)
	}
	if got := <-out; !strings.HasPrefix(got, "hello from /") {
		t.Errorf("output %q", got)
	}
	if u, err := job.Usage(); err != nil || u != (starter.Usage{}) {
		t.Errorf("usage of a plain process while it runs: %+v, %v; want none", u, err)
	}
}

// TestProcessRunnerSetsLimits: a job with resource limits runs through
// the runner's WithLimits command, which gets each limit, the program's
// path, its argv[0] and its arguments (here a shell stand-in for
// harrier's exec-with-limits); without one the job does not start.
func TestProcessRunnerSetsLimits(t *testing.T) {
	limits := []starter.Rlimit{{Resource: unix.RLIMIT_CORE, Limit: 0}, {Resource: unix.RLIMIT_STACK, Limit: 16 << 20}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := scratchDir(t)
	with := filepath.Join(dir, "with-limits")
	if err := os.WriteFile(with, []byte(`#!/bin/sh
echo "limits: $1 $2"
[ "$3" = -- ] || exit 9
ulimit -c "${1#4=}"
ulimit -s "$(( ${2#3=} / 1024 ))"
shift 3
path=$1
shift 2 # and argv[0], which sh cannot pass on
exec "$path" "$@"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	runner := processRunner(t)
	runner.WithLimits = []string{with}
	task := &starter.Task{ID: "1.0", Path: "/bin/sh", Args: []string{"-c", `ulimit -c; ulimit -s; echo "$0"`}, Dir: dir, ScratchDir: dir,
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w, Stderr: w, Rlimits: limits}
	job, err := runner.Start(context.Background(), task)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	if want := "limits: 4=0 3=16777216\n0\n16384\n/bin/sh\n"; string(out) != want {
		t.Errorf("the job's output:\n%s\nwant\n%s", out, want)
	}
	runner.WithLimits = nil
	if _, err := runner.Start(context.Background(), task); err == nil || !strings.Contains(err.Error(), "resource limits") {
		t.Errorf("a runner without WithLimits started a job with limits: %v", err)
	}
}

// TestProcessRunnerSignals: the job's whole process group is stopped,
// continued and killed, and a job killed by a signal says which.
func TestProcessRunnerSignals(t *testing.T) {
	job, out := runProcess(t, `sleep 600 & wait`)
	if err := job.Suspend(); err != nil {
		t.Fatal(err)
	}
	if err := job.Continue(); err != nil {
		t.Fatal(err)
	}
	if err := job.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	x, err := job.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if x.Signal != int(unix.SIGTERM) {
		t.Errorf("exit %+v, want SIGTERM", x)
	}
	<-out // closed: Wait left nothing of the job (the sleep) holding it
}

func TestProcessRunnerMissingProgram(t *testing.T) {
	dir := scratchDir(t)
	_, err := processRunner(t).Start(context.Background(), &starter.Task{Path: "/nonexistent/prog", Dir: dir, ScratchDir: dir})
	if err == nil || !strings.Contains(err.Error(), "Failed to execute '/nonexistent/prog'") {
		t.Errorf("start of a missing program: %v, want HTCondor's hold reason", err)
	}
}

// TestProcessRunnerRunsJobsAsItsUser: a job run by a root starter runs as
// the runner's user, owns its scratch directory and cannot read what
// only root may; a runner with no user refuses to run jobs as root.
func TestProcessRunnerRunsJobsAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root starter's job runs as another user")
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	job, out := runProcess(t, `id -u; stat -c %u .; cat `+secret+` 2>/dev/null || echo refused`)
	if x, err := job.Wait(); err != nil || x.Code != 0 {
		t.Fatalf("job: %+v %v", x, err)
	}
	nobody, _ := asuser.Lookup("nobody")
	want := fmt.Sprintf("%d\n%d\nrefused\n", nobody.UID, nobody.UID)
	if got := <-out; got != want {
		t.Errorf("the job said %q, want %q (its uid, its scratch directory's owner, the root-only file refused)", got, want)
	}
	dir := scratchDir(t)
	if _, err := (starter.ProcessRunner{}).Start(context.Background(), &starter.Task{Path: "/bin/true", Dir: dir, ScratchDir: dir}); err == nil {
		t.Error("a root starter's ProcessRunner without a user ran a job")
	}
}

// TestProcessRunnerKeepsTheJobTogether: a job kept in a cgroup (as a
// root startd's plain-process jobs are) is suspended, counted and ended
// whole, what it left running in a session of its own included.
func TestProcessRunnerKeepsTheJobTogether(t *testing.T) {
	stateRoot := t.TempDir()
	cgroups, err := sandbox.NewProcessCgroups(stateRoot, "slot1")
	if err != nil {
		t.Skipf("no cgroups for plain processes here: %v", err)
	}
	t.Cleanup(func() { _ = sandbox.Cleanup(stateRoot, "slot1") })
	r := processRunner(t)
	r.Track = func() (starter.ProcessTracker, error) { return cgroups.Open() }
	dir := scratchDir(t)
	task := &starter.Task{ID: "1.0", Path: "/bin/sh", Dir: dir, ScratchDir: dir, Env: []string{"PATH=/usr/bin:/bin"},
		Args: []string{"-c", `setsid sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $! > daemon.pid; sleep 600`}}
	job, err := r.Start(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "daemon.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the job's daemon never started")
		}
	}
	ticks := func() string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return "gone"
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		return f[11] + "+" + f[12] // utime, stime
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if u, err := job.Usage(); err == nil && u.UserCPU > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no processor time counted while the job's daemon spins")
		}
	}
	if err := job.Suspend(); err != nil {
		t.Fatal(err)
	}
	before := ticks()
	time.Sleep(200 * time.Millisecond)
	if after := ticks(); after != before {
		t.Errorf("the job's daemon ran on while the job was suspended: %s -> %s", before, after)
	}
	if err := job.Continue(); err != nil {
		t.Fatal(err)
	}
	if err := job.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	x, err := job.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if x.Signal != int(unix.SIGTERM) || x.Usage.UserCPU == 0 {
		t.Errorf("exit %+v, want SIGTERM, with the daemon's processor time", x)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Error("the job's daemon outlived it")
	}
}

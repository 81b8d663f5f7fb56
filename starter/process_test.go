package starter_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/starter"
)

// runProcess starts script with ProcessRunner and returns the job and a
// channel that yields its standard output once it is closed.
func runProcess(t *testing.T, script string) (starter.Job, <-chan string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	task := &starter.Task{ID: "1.0", Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir(),
		Env: []string{"PATH=/usr/bin:/bin", "GREETING=hello"}, Stdout: w, Stderr: w}
	job, err := starter.ProcessRunner{}.Start(context.Background(), task)
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
	_, err := starter.ProcessRunner{}.Start(context.Background(), &starter.Task{Path: "/nonexistent/prog", Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "Failed to execute '/nonexistent/prog'") {
		t.Errorf("start of a missing program: %v, want HTCondor's hold reason", err)
	}
}

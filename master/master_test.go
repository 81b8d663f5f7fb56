package master

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemonScript records its start in $1/starts and its SIGTERM in
// $1/stops (one line with its name each), then runs until stopped.
const daemonScript = `echo "$2" >> "$1/starts"
trap 'echo "$2" >> "$1/stops"; exit 0' TERM
while :; do sleep 0.05; done`

func testConfig(t *testing.T, dir string, names ...string) Config {
	cfg := DefaultConfig()
	cfg.BackoffConstant = 50 * time.Millisecond
	cfg.BackoffFactor = 0 // 1 s would be 0^0 = 1 s for the first restart
	cfg.StopGrace = 5 * time.Second
	for _, n := range names {
		cfg.Daemons = append(cfg.Daemons, Daemon{Name: n, Argv: []string{"/bin/sh", "-c", daemonScript, n, dir, n},
			Log: filepath.Join(dir, n+".log"), PidFile: filepath.Join(dir, n+".pid")})
	}
	return cfg
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func pidOf(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func run(t *testing.T, cfg Config) (stop func()) {
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// Daemons start in order, one killed is started again, and all stop in
// reverse order.
func TestRestartAndOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "matchmaker", "agent", "startd")
	var log lockedBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	stop := run(t, cfg)
	// The daemons run at once, so the order they write in proves nothing;
	// the master's log says in which order it started them. A daemon may
	// write before the master has logged its start, so wait for both.
	var started []string
	waitFor(t, "three starts", func() bool {
		started = started[:0]
		for _, line := range strings.Split(log.String(), "\n") {
			if _, name, ok := strings.Cut(line, `msg="daemon started" name=`); ok {
				started = append(started, strings.Fields(name)[0])
			}
		}
		return len(started) == 3 && len(lines(t, filepath.Join(dir, "starts"))) == 3
	})
	if got := strings.Join(started, " "); got != "matchmaker agent startd" {
		t.Errorf("started %q, want in the configured order", got)
	}
	old := pidOf(t, filepath.Join(dir, "agent.pid"))
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent's restart", func() bool {
		p := pidOf(t, filepath.Join(dir, "agent.pid"))
		return p != 0 && p != old && len(lines(t, filepath.Join(dir, "starts"))) == 4
	})
	stop()
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), " "); got != "startd agent matchmaker" {
		t.Errorf("stopped %q, want the reverse order", got)
	}
	for _, n := range []string{"matchmaker", "agent", "startd"} {
		if _, err := os.Stat(filepath.Join(dir, n+".pid")); !os.IsNotExist(err) {
			t.Errorf("%s's pid file left: %v", n, err)
		}
	}
}

// A daemon that keeps failing waits longer each time.
func TestBackoffGrows(t *testing.T) {
	m, err := New(Config{Daemons: []Daemon{{Name: "d", Argv: []string{"/bin/false"}}},
		BackoffConstant: time.Second, BackoffFactor: 2, BackoffCeiling: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for n := range 6 {
		got = append(got, m.backoff(n))
	}
	want := []time.Duration{2, 3, 5, 9, 10, 10}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Errorf("back-off after %d restarts: %v, want %v", i, got[i], want[i]*time.Second)
		}
	}
}

// A new executable restarts every daemon on it.
func TestChangedExecutableRestartsDaemons(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "harrier")
	if err := os.WriteFile(exe, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir, "agent", "startd")
	cfg.Executable, cfg.CheckExecInterval = exe, 20*time.Millisecond
	stop := run(t, cfg)
	defer stop()
	waitFor(t, "two starts", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 2 })
	// A new file in its place, as an install does.
	if err := os.WriteFile(exe+".new", []byte("v2, longer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(exe+".new", exe); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restart on the new executable", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 4 })
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), " "); got != "startd agent" {
		t.Errorf("stopped %q before the restart, want startd agent", got)
	}
}

// A daemon that cannot even start is retried, and the others run.
func TestUnstartableDaemonIsRetried(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "agent")
	cfg.Daemons = append(cfg.Daemons, Daemon{Name: "broken", Argv: []string{filepath.Join(dir, "missing")}, Log: filepath.Join(dir, "broken.log")})
	stop := run(t, cfg)
	defer stop()
	waitFor(t, "the agent", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 1 })
	// Now it exists: the next retry starts it.
	script := "#!/bin/sh\n" + `echo broken >> "` + dir + `/starts"; exec sleep 60` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "missing"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken daemon's retry", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 2 })
}

func TestBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no daemons": {},
		"no command": {Daemons: []Daemon{{Name: "agent"}}},
		"twice":      {Daemons: []Daemon{{Name: "a", Argv: []string{"x"}}, {Name: "a", Argv: []string{"x"}}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// lockedBuffer is a buffer a logger may write to while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package master

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trappingScript is daemonScript with its traps set before it says it
// started, so that a stop right after the start is recorded; SIGHUP is
// recorded in $1/hups, and SIGQUIT (a fast stop) in $1/stops as NAME:fast.
const trappingScript = `trap 'echo "$2" >> "$1/stops"; exit 0' TERM
trap 'echo "$2:fast" >> "$1/stops"; exit 0' QUIT
trap 'echo "$2" >> "$1/hups"' HUP
echo "$2" >> "$1/starts"
while :; do sleep 0.05; done`

func trappingConfig(t *testing.T, dir string, names ...string) Config {
	cfg := testConfig(t, dir, names...)
	for i := range cfg.Daemons {
		cfg.Daemons[i].Argv[2] = trappingScript
	}
	return cfg
}

// runMaster is run that also hands back the master, for its requests.
func runMaster(t *testing.T, cfg Config) (*Master, func()) {
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return m, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// A daemon turned off stays off, past its back-off, until turned on;
// restart stops and starts it; the others are left alone.
func TestOffOnRestart(t *testing.T) {
	dir := t.TempDir()
	m, stop := runMaster(t, trappingConfig(t, dir, "agent", "startd"))
	defer stop()
	ctx := context.Background()
	// Daemons started together write their lines in any order.
	starts := func() string {
		l := lines(t, filepath.Join(dir, "starts"))
		slices.Sort(l)
		return strings.Join(l, " ")
	}
	waitFor(t, "two starts", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 2 })

	names, stopping, err := m.Off(ctx, "startd", Graceful)
	if err != nil || strings.Join(names, " ") != "startd" || len(stopping) != 0 {
		t.Fatalf("Off: %v %v %v", names, stopping, err)
	}
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), " "); got != "startd" {
		t.Errorf("stopped %q, want startd", got)
	}
	// The back-off is 50 ms: a master that restarted it would have by
	// the time Status has gone through the loop several times.
	for range 20 {
		st, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st[1].Off || st[1].Pid != 0 || st[0].Pid == 0 {
			t.Fatalf("after Off: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := starts(); got != "agent startd" {
		t.Errorf("started %q while off", got)
	}
	if _, err := m.On(ctx, "startd"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the start after On", func() bool { return starts() == "agent startd startd" })
	if _, err := m.Restart(ctx, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the starts after Restart", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 5 })
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), " "); got != "startd startd agent" {
		t.Errorf("stopped %q, want startd, then startd agent", got)
	}
	st, _ := m.Status(ctx)
	if st[0].Restarts != 1 || st[1].Restarts != 2 {
		t.Errorf("restarts: %+v", st)
	}
	if _, _, err := m.Off(ctx, "nosuch", Graceful); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("Off of an unknown daemon: %v", err)
	}
}

// A reconfiguration stops a daemon no longer listed, starts a new one
// and sends SIGHUP to those that stay.
func TestReconfigure(t *testing.T) {
	// A shell cannot trap a signal that was ignored when it started
	// (POSIX), and the daemons inherit this process's dispositions: run
	// under nohup, their SIGHUP would be ignored. Caught here, it is the
	// default in them, as under harrier master, which catches it too.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	dir := t.TempDir()
	cfg := trappingConfig(t, dir, "agent", "startd")
	m, stop := runMaster(t, cfg)
	defer stop()
	waitFor(t, "two starts", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 2 })
	next := trappingConfig(t, dir, "agent", "matchmaker")
	if err := m.Reconfigure(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), " "); got != "startd" {
		t.Errorf("stopped %q, want startd", got)
	}
	waitFor(t, "the matchmaker's start", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 3 })
	waitFor(t, "the agent's SIGHUP", func() bool { return strings.Join(lines(t, filepath.Join(dir, "hups")), " ") == "agent" })
	st, _ := m.Status(context.Background())
	if len(st) != 2 || st[0].Name != "agent" || st[1].Name != "matchmaker" {
		t.Errorf("after Reconfigure: %+v", st)
	}
}

// Off -fast sends SIGQUIT; Off -peaceful stops at once, gracefully and in
// order, the daemons that cannot stop peacefully (these have no
// administrator's socket), and says none is still stopping.
func TestOffModes(t *testing.T) {
	dir := t.TempDir()
	m, stop := runMaster(t, trappingConfig(t, dir, "matchmaker", "agent", "startd"))
	defer stop()
	ctx := context.Background()
	waitFor(t, "three starts", func() bool { return len(lines(t, filepath.Join(dir, "starts"))) == 3 })

	if names, stopping, err := m.Off(ctx, "startd", Fast); err != nil || strings.Join(names, " ") != "startd" || len(stopping) != 0 {
		t.Fatalf("Off fast: %v %v %v", names, stopping, err)
	}
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), ","); got != "startd:fast" {
		t.Errorf("a fast Off stopped %q, want startd:fast", got)
	}
	names, stopping, err := m.Off(ctx, "", Peaceful)
	if err != nil || strings.Join(names, " ") != "matchmaker agent startd" || len(stopping) != 0 {
		t.Fatalf("Off peaceful: %v %v %v", names, stopping, err)
	}
	if got := strings.Join(lines(t, filepath.Join(dir, "stops")), ","); got != "startd:fast,agent,matchmaker" {
		t.Errorf("stops: %q, want the agent, then the matchmaker", got)
	}
	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range st {
		if !d.Off || d.Pid != 0 {
			t.Errorf("after a peaceful Off of all: %+v", d)
		}
	}
}

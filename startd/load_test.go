package startd

import (
	"math"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want proc
		ok   bool
	}{
		{"4242 (sh) S 4200 4242 4242 0 -1 4194560 120 0 0 0 17 5 0 0 20 0 1 0 12345 2469888 220 18446744073709551615", proc{ppid: 4200, ticks: 22}, true},
		// A command name with spaces and parentheses.
		{"7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 300 200 0 0 20 0 1 0 1 1 1", proc{ppid: 1, ticks: 500}, true},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 300", proc{}, false},
		{"7 x R 1 7 7 0 -1 0 0 0 0 0 300 200", proc{}, false},
		{"7 (x) R one 7 7 0 -1 0 0 0 0 0 300 200", proc{}, false},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 -3 200", proc{}, false},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 18446744073709551615 2", proc{}, false},
	} {
		got, err := parseStat([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v", c.in, got, err)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sh) S 4200 4242 4242 0 -1 4194560 120 0 0 0 17 5 0 0 20 0 1 0 12345 2469888 220"))
	f.Add([]byte("1 ()) R 0 1 1 0 -1 0 0 0 0 0 0 0"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseStat(b)
		if err != nil && p != (proc{}) {
			t.Errorf("parseStat(%q) = %+v with error %v", b, p, err)
		}
	})
}

func TestDescendants(t *testing.T) {
	procs := map[int]proc{1: {ppid: 0}, 10: {ppid: 1}, 11: {ppid: 10}, 12: {ppid: 11}, 13: {ppid: 10}, 20: {ppid: 1},
		30: {ppid: 31}, 31: {ppid: 30}} // a cycle cannot happen, but must not hang
	got := descendants(procs, 10)
	slices.Sort(got)
	if !slices.Equal(got, []int{10, 11, 12, 13}) {
		t.Errorf("descendants of 10 = %v", got)
	}
	if got := descendants(procs, 99); got != nil {
		t.Errorf("descendants of a missing process = %v", got)
	}
	if got := descendants(procs, 30); len(got) != 2 {
		t.Errorf("descendants in a cycle = %v", got)
	}
}

func TestDecayLoad(t *testing.T) {
	// One busy CPU for a minute from idle: 1 - 1/e, as the kernel's
	// one-minute average; the step size does not matter.
	for _, step := range []time.Duration{time.Second, 5 * time.Second, time.Minute} {
		l := 0.0
		for range time.Minute / step {
			l = decayLoad(l, 1, step)
		}
		if want := 1 - 1/math.E; math.Abs(l-want) > 1e-9 {
			t.Errorf("step %v: load %v, want %v", step, l, want)
		}
	}
	if l := decayLoad(2, 0, 0); l != 2 {
		t.Errorf("no time passed: %v", l)
	}
}

// A job's CPU use shows as its slot's load; an idle job's slot and a busy
// process outside Harrier do not count. Both ways of finding the trees
// are tried where the kernel lists children.
func TestLoadMeterCountsOnlyStarterTrees(t *testing.T) {
	t.Run("scan", func(t *testing.T) { testLoadMeter(t, false) })
	if newLoadMeter("/proc").children {
		t.Run("children", func(t *testing.T) { testLoadMeter(t, true) })
	}
}

func testLoadMeter(t *testing.T, children bool) {
	start := func(script string) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", script)
		// Its own process group, so that the cleanup reaches the busy
		// grandchild too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		return cmd
	}
	// The busy job runs in a grandchild of the "starter".
	busyStarter := start(`/bin/sh -c 'while :; do :; done' & wait`)
	idleStarter := start(`sleep 600`)
	outside := start(`while :; do :; done`)

	lm := newLoadMeter("/proc")
	lm.children = children
	starters := map[int]int{1: busyStarter.Process.Pid, 2: idleStarter.Process.Pid}
	deadline := time.Now().Add(30 * time.Second)
	for lm.load(1) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the busy job's slot never showed load: %v", lm.load(1))
		}
		lm.sample(starters, time.Now())
		time.Sleep(100 * time.Millisecond)
	}
	if l := lm.load(2); l != 0 {
		t.Errorf("idle job's slot load %v", l)
	}
	lm.mu.Lock()
	_, busyIn := lm.prev[busyStarter.Process.Pid]
	_, idleIn := lm.prev[idleStarter.Process.Pid]
	_, outsideIn := lm.prev[outside.Process.Pid]
	members := len(lm.prev)
	lm.mu.Unlock()
	if !busyIn || !idleIn || members < 3 {
		t.Errorf("starters' trees incomplete: busy %v, idle %v, %d processes", busyIn, idleIn, members)
	}
	if outsideIn {
		t.Error("a process outside Harrier was counted")
	}
	// The job ends: its slot's load decays.
	before := lm.load(1)
	lm.sample(map[int]int{2: idleStarter.Process.Pid}, time.Now().Add(time.Minute))
	if after := lm.load(1); !(after < before) {
		t.Errorf("load after the job ended %v, before %v", after, before)
	}
}

func BenchmarkLoadSample(b *testing.B) {
	lm := newLoadMeter("/proc")
	starters := map[int]int{1: os.Getpid()}
	b.ReportAllocs()
	for b.Loop() {
		lm.sample(starters, time.Now())
	}
}

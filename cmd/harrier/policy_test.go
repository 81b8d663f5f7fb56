package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/startd"
)

// startPolicyPool starts a personal pool whose pool.conf ends with extra,
// written before any daemon starts.
func startPolicyPool(t *testing.T, extra string) *testPool {
	t.Helper()
	needPool(t)
	base := t.TempDir()
	// Other users (the unwelcome submitter) must reach the agent's socket.
	for d := base; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	p := &testPool{dir: filepath.Join(base, "pool")}
	p.env = []string{"HARRIER_POOL=" + p.dir}
	if err := createPool(p.dir); err != nil {
		t.Fatal(err)
	}
	appendConf(t, filepath.Join(p.dir, poolConfigName), extra)
	t.Cleanup(func() {
		out, code := harrier(t, nil, "pool", "down", "--dir", p.dir)
		if code != 0 {
			t.Errorf("pool down: exit %d: %s", code, out)
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(p.dir, "log", "*.log"))
			starters, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "starter.*.log"))
			for _, l := range append(logs, starters...) {
				b, _ := os.ReadFile(l)
				t.Logf("---- %s\n%s", l, b)
			}
		}
	})
	out := mustHarrier(t, nil, "pool", "up", "--dir", p.dir, "--detach")
	if !strings.Contains(out, "Pool up") {
		t.Fatalf("pool up said: %s", out)
	}
	return p
}

func appendConf(t testing.TB, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n" + text + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// machine returns the pool's only machine ad, decoded from status -json.
func (p *testPool) machine(t *testing.T) map[string]any {
	t.Helper()
	ads := p.jobs(t, "status")
	if len(ads) != 1 {
		t.Fatalf("status shows %d machines, want 1", len(ads))
	}
	return ads[0]
}

// terminal is a pseudo-terminal with someone at it: what is typed on the
// master side is read by a "shell" on the slave side, which moves the
// slave's access time exactly as a real login session does.
type terminal struct {
	master *os.File
	path   string // of the slave, /dev/pts/N
}

func openTerminal(t *testing.T) *terminal {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(mfd)
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(mfd)
		t.Fatalf("pty number: %v", err)
	}
	path := fmt.Sprintf("/dev/pts/%d", n)
	sfd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(mfd)
		t.Fatalf("open %s: %v", path, err)
	}
	// Non-blocking descriptors use the poller, so Close ends the readers.
	_ = unix.SetNonblock(mfd, true)
	_ = unix.SetNonblock(sfd, true)
	master, slave := os.NewFile(uintptr(mfd), "/dev/ptmx"), os.NewFile(uintptr(sfd), path)
	go io.Copy(io.Discard, slave)  // the owner's shell reads what they type
	go io.Copy(io.Discard, master) // and the terminal shows its echo
	t.Cleanup(func() {
		master.Close()
		slave.Close()
	})
	return &terminal{master: master, path: path}
}

// press types a short command.
func (k *terminal) press(t *testing.T) {
	t.Helper()
	if _, err := k.master.WriteString("ls\n"); err != nil {
		t.Fatalf("type on %s: %v", k.path, err)
	}
}

// keepTyping types every half second until the returned function is
// called.
func (k *terminal) keepTyping(t *testing.T) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = k.master.WriteString("ls\n")
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// busyLoop starts a process outside Harrier that keeps a CPU busy, as the
// owner's own work would.
func busyLoop(t *testing.T) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// The desktop policy with its times shrunk from minutes to seconds. The
// keyboard counts as busy for 12 s, above the kernel's 8-second granularity
// of terminal access times; a job suspended for 20 s, longer than it takes
// an owner who left to count as gone, is vacated. The load thresholds are out of reach: the load
// of a shared test machine is not the test's to control (the load
// accounting has its own tests in startd).
const desktopTestConf = `use POLICY : Desktop
DESKTOP_IDLE_TIME = 12
DESKTOP_BUSY_TIME = 12
DESKTOP_CONTINUE_IDLE_TIME = 12
DESKTOP_MAX_SUSPEND_TIME = 20
DESKTOP_BACKGROUND_LOAD = 1000
DESKTOP_HIGH_LOAD = 1000
TERMINAL_DEVICES = %s
CONSOLE_DEVICES =
`

func TestDesktopPolicyFollowsTheOwner(t *testing.T) {
	t.Parallel()
	kb := openTerminal(t)
	busyLoop(t)
	p := startPolicyPool(t, fmt.Sprintf(desktopTestConf, kb.path))
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	writeFile(t, filepath.Join(dir, "burn.sh"), "#!/bin/sh\nwhile :; do :; done\n", 0o755)
	c := p.submit(t, dir, "burn.sub", "executable = burn.sh\nlog = burn.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	logPath := filepath.Join(dir, "burn.log")

	// The owner is typing: the machine is theirs and the job waits.
	for range 8 {
		kb.press(t)
		time.Sleep(500 * time.Millisecond)
		if st := p.jobStatus(t, id); st != 1 {
			t.Fatalf("JobStatus %d while the owner types, want 1 (idle)", st)
		}
	}
	if m := p.machine(t); m["State"] != "Owner" {
		t.Errorf("machine is %v/%v while the owner types, want Owner", m["State"], m["Activity"])
	}

	// The owner leaves: once the keyboard has been idle long enough the
	// job starts, and its CPU use counts as Harrier's load.
	eventually(t, 60*time.Second, "the job to start on the idle machine", func() bool { return p.jobStatus(t, id) == 2 })
	eventually(t, 30*time.Second, "the job's load to show as CondorLoadAvg", func() bool {
		m := p.machine(t)
		load, _ := m["CondorLoadAvg"].(float64)
		return m["Activity"] == "Busy" && load > 0
	})
	if table := p.must(t, "status"); !strings.Contains(table, "Claimed") || !strings.Contains(table, "Busy") {
		t.Errorf("status while the job runs:\n%s", table)
	}

	// The owner comes back: the job is suspended within two seconds (one
	// polling interval and a few messages; the deadline leaves room for a
	// loaded test machine).
	kb.press(t)
	// A keystroke moves the terminal's access time at most once in 8 s.
	eventually(t, 12*time.Second, "the job to be suspended", func() bool { return p.jobStatus(t, id) == 7 })
	if !strings.Contains(readLog(t, logPath), "010 (") {
		t.Errorf("no suspension event in the log:\n%s", readLog(t, logPath))
	}
	if m := p.machine(t); m["Activity"] != "Suspended" {
		t.Errorf("machine is %v/%v, want Claimed/Suspended", m["State"], m["Activity"])
	}
	if table := p.must(t, "status"); !strings.Contains(table, "Suspended") {
		t.Errorf("status while the job is suspended:\n%s", table)
	}

	// The owner leaves again: the job continues.
	eventually(t, 40*time.Second, "the job to continue", func() bool { return p.jobStatus(t, id) == 2 })
	if !strings.Contains(readLog(t, logPath), "011 (") {
		t.Errorf("no unsuspension event in the log:\n%s", readLog(t, logPath))
	}

	// The owner stays: the job is suspended, and vacated once it has been
	// suspended for the limit; it goes back to the queue.
	stop := kb.keepTyping(t)
	// The kernel moves a terminal's access time at most once in 8 s, so
	// fresh typing right after a quiet spell may take that long to show.
	eventually(t, 12*time.Second, "the job to be suspended again", func() bool { return p.jobStatus(t, id) == 7 })
	eventually(t, 40*time.Second, "the job to be evicted", func() bool { return strings.Contains(readLog(t, logPath), "004 (") })
	eventually(t, 10*time.Second, "the evicted job to be idle", func() bool { return p.jobStatus(t, id) == 1 })
	for range 4 {
		time.Sleep(500 * time.Millisecond)
		if st := p.jobStatus(t, id); st != 1 {
			t.Fatalf("JobStatus %d while the owner still types, want 1 (idle)", st)
		}
	}

	// The owner leaves for good: the job runs again.
	stop()
	eventually(t, 60*time.Second, "the evicted job to run again", func() bool { return p.jobStatus(t, id) == 2 })
	log := readLog(t, logPath)
	for _, want := range []string{"Job was suspended.", "Job was unsuspended.", "Job was evicted."} {
		if !strings.Contains(log, want) {
			t.Errorf("event log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "001 ("); n != 2 {
		t.Errorf("job executed %d times, want 2:\n%s", n, log)
	}
	p.must(t, "rm", id)
}

func TestOwnerChoosesJobs(t *testing.T) {
	t.Parallel()
	// No terminals watched: the keyboard has been idle since boot.
	p := startPolicyPool(t, `use POLICY : Desktop
DESKTOP_IDLE_TIME = 0
DESKTOP_BACKGROUND_LOAD = 1000
DESKTOP_HIGH_LOAD = 1000
DESKTOP_WELCOME_JOBS = TARGET.Owner != "nobody" && TARGET.Tier < 3
RANK = TARGET.Department == "Physics"
TERMINAL_DEVICES =
CONSOLE_DEVICES =
`)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	sub := func(name, extra string) string {
		return fmt.Sprintf("executable = /bin/true\nlog = %s.log\n%squeue\n", name, extra)
	}
	// An unwelcome user's job, and a job for which START is undefined
	// (it has no Tier): neither may start.
	writeFile(t, filepath.Join(dir, "unwelcome.sub"), sub("unwelcome", "+Tier = 1\n"), 0o644)
	out, code := harrierAs(t, p.env, "nobody", "submit", filepath.Join(dir, "unwelcome.sub"))
	if code != 0 {
		t.Fatalf("submit as nobody: exit %d: %s", code, out)
	}
	var n, unwelcome int
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &unwelcome); err != nil {
		t.Fatalf("submit said %q: %v", out, err)
	}
	undefined := p.submit(t, dir, "undefined.sub", sub("undefined", ""))
	welcome := p.submit(t, dir, "welcome.sub", sub("welcome", "+Tier = 1\n+Department = \"Physics\"\n"))

	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", welcome)); code != 0 {
		t.Fatalf("the welcome job did not finish: exit %d: %s", code, out)
	}
	for _, c := range []struct {
		name    string
		cluster int
	}{{"unwelcome", unwelcome}, {"undefined", undefined}} {
		if st := p.jobStatus(t, fmt.Sprintf("%d.0", c.cluster)); st != 1 {
			t.Errorf("%s job: JobStatus %d, want 1 (idle)", c.name, st)
		}
		if log := readLog(t, filepath.Join(dir, c.name+".log")); strings.Contains(log, "001 (") {
			t.Errorf("%s job was started:\n%s", c.name, log)
		}
	}
	m := p.machine(t)
	if m["State"] != "Unclaimed" {
		t.Errorf("machine is %v/%v, want Unclaimed", m["State"], m["Activity"])
	}
}

func TestPolicyErrorsAtStartup(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pool")
	if err := createPool(dir); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, poolConfigName)
	appendConf(t, conf, "use POLICY : Desktop\nSUSPEND = KeyboardIdle < (60 *\nPREEMPT = Activity == \"Suspended\" &&& true\n")
	out, code := harrier(t, nil, "daemon", "startd", "--config", conf)
	if code == 0 {
		t.Fatalf("startd started with a broken policy:\n%s", out)
	}
	for _, want := range []string{"SUSPEND: line 1, column", "PREEMPT: line 1, column"} {
		if !strings.Contains(out, want) {
			t.Errorf("startd error lacks %q:\n%s", want, out)
		}
	}
}

func TestPolicyTemplates(t *testing.T) {
	dir := t.TempDir()
	example, err := filepath.Abs(filepath.Join("..", "..", "examples", "desktop-policy", "desktop.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, conf string
		want       map[string]string
	}{
		{"desktop", "use POLICY : Desktop\nDESKTOP_IDLE_TIME = 30\n", map[string]string{
			"START":    `(true) && KeyboardIdle > (30) && ((LoadAvg - CondorLoadAvg) <= (0.3))`,
			"SUSPEND":  `(KeyboardIdle < (60)) || ((LoadAvg - CondorLoadAvg) >= (0.5))`,
			"IS_OWNER": `(START =?= false)`,
		}},
		{"example", "include : " + example + "\n", map[string]string{
			"START": `(TARGET.Owner != "mallory") && KeyboardIdle > (15 * 60) && ((LoadAvg - CondorLoadAvg) <= (0.3))`,
			"RANK":  `TARGET.Department == "Physics"`,
		}},
		{"always", "use POLICY : Desktop\nuse POLICY : Always_Run_Jobs\n", map[string]string{
			"START": "true", "SUSPEND": "false", "IS_OWNER": "false",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".conf")
			writeFile(t, path, c.conf, 0o644)
			pc, err := loadPoolConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg startdConfigView
			if err := startdPolicy(pc, &cfg.Config); err != nil {
				t.Fatal(err)
			}
			got := cfg.byKey()
			for key, want := range c.want {
				if got[key] != want {
					t.Errorf("%s = %s, want %s", key, got[key], want)
				}
			}
			for key, text := range got {
				if text == "" {
					continue
				}
				if _, err := classad.ParseExpr(text); err != nil {
					t.Errorf("%s = %s: %v", key, text, err)
				}
			}
		})
	}
}

func TestPolicyDevices(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pool.conf")
	writeFile(t, path, "TERMINAL_DEVICES = /dev/pts/3, /dev/tty1\nCONSOLE_DEVICES =\nPOLLING_INTERVAL = 0.5\nCLAIM_LEASE = 2m\n", 0o644)
	pc, err := loadPoolConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg startdConfigView
	if err := startdPolicy(pc, &cfg.Config); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{cfg.Terminals, cfg.ConsoleDevices, cfg.PollingInterval, cfg.ClaimLease})
	if got, want := string(b), `[["/dev/pts/3","/dev/tty1"],[],500000000,120000000000]`; got != want {
		t.Errorf("devices and intervals %s, want %s", got, want)
	}
	writeFile(t, path, "POLLING_INTERVAL = soon\n", 0o644)
	if pc, err = loadPoolConfig(path); err != nil {
		t.Fatal(err)
	}
	if err := startdPolicy(pc, &cfg.Config); err == nil || !strings.Contains(err.Error(), "POLLING_INTERVAL") {
		t.Errorf("bad interval: %v", err)
	}
}

// startdConfigView gives the tests the policy of a startd configuration
// by key.
type startdConfigView struct{ startd.Config }

func (c *startdConfigView) byKey() map[string]string {
	return map[string]string{
		"START": c.Start, "RANK": c.Rank, "SUSPEND": c.Suspend, "CONTINUE": c.Continue, "PREEMPT": c.Preempt,
		"KILL": c.Kill, "WANT_SUSPEND": c.WantSuspend, "WANT_VACATE": c.WantVacate, "IS_OWNER": c.IsOwner,
		"MACHINE_MAX_VACATE_TIME": c.MaxVacateTime,
	}
}

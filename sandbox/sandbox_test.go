package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestExitCodeAndOutput(t *testing.T) {
	r := testRunner(t, nil)
	res := runJob(t, r, "echo out; echo err >&2; exit 42", nil)
	if res.exit.Code != 42 || res.exit.Signal != 0 || res.exit.HoldReason != "" {
		t.Errorf("exit = %+v, want code 42", res.exit)
	}
	if res.stdout != "out\n" || res.stderr != "err\n" {
		t.Errorf("stdout %q stderr %q", res.stdout, res.stderr)
	}
}

// A job runs under the resource limits its task sets (its coresize and
// stack_size), from its first instruction, soft and hard alike; without
// them, under the machine's.
func TestJobRlimits(t *testing.T) {
	r := testRunner(t, nil)
	script := "ulimit -c; ulimit -Hc; ulimit -s"
	res := runJob(t, r, script, func(task *Task) {
		task.Rlimits = []Rlimit{{Resource: unix.RLIMIT_CORE, Limit: 0}, {Resource: unix.RLIMIT_STACK, Limit: 16 << 20}}
	})
	if want := "0\n0\n16384\n"; res.stdout != want {
		t.Errorf("limits (core, hard core, stack in KiB) %q, want %q", res.stdout, want)
	}
	var stack unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &stack); err != nil {
		t.Fatal(err)
	}
	res = runJob(t, r, "ulimit -s", nil)
	want := "unlimited\n"
	if stack.Cur != unix.RLIM_INFINITY {
		want = fmt.Sprintf("%d\n", stack.Cur/1024)
	}
	if res.stdout != want {
		t.Errorf("without limits the stack limit is %q, want the machine's %q", res.stdout, want)
	}
}

func TestIsolation(t *testing.T) {
	r := testRunner(t, nil)
	outside := t.TempDir() // a host directory outside the scratch
	script := `
echo "pid $$"
echo "procs $(ls /proc | grep -c '^[0-9]')"
echo "uid $(id -u)"
echo "host $(hostname)"
echo "ifaces $(ls /sys/class/net | tr '\n' ' ')"
echo "caps $(grep CapEff /proc/self/status | tr -d '\t')"
echo "nnp $(grep NoNewPrivs /proc/self/status | tr -d '\t')"
touch /etc/harrier-escape 2>/dev/null && echo "wrote /etc"
touch ` + outside + `/escape 2>/dev/null && echo "wrote outside"
touch /usr/harrier-escape 2>/dev/null && echo "wrote /usr"
echo hi > /tmp/private && echo "tmp ok"
echo data > result.txt && echo "scratch ok"
cat /proc/kcore 2>/dev/null | head -c1 | wc -c | sed 's/^/kcore /'
`
	var scratch string
	res := runJob(t, r, script, func(task *Task) { scratch = t.TempDir(); task.ScratchDir = scratch })
	if res.exit.Code != 0 {
		t.Fatalf("exit %+v, stderr %s", res.exit, res.stderr)
	}
	got := map[string]string{}
	for _, l := range lines(res.stdout) {
		k, v, _ := strings.Cut(l, " ")
		got[k] = strings.TrimSpace(v)
	}
	nobody, err := lookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"pid": "1", "uid": strconv.Itoa(nobody.uid), "host": "slot1-1.0", "ifaces": "lo",
		"caps": "CapEff:0000000000000000", "nnp": "NoNewPrivs:1", "tmp": "ok", "scratch": "ok", "kcore": "0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (stdout:\n%s)", k, got[k], v, res.stdout)
		}
	}
	// Only the shell and ls (and grep) may be seen: no host process.
	if n, _ := strconv.Atoi(got["procs"]); n > 5 || n < 1 {
		t.Errorf("job sees %s processes, want only its own", got["procs"])
	}
	for _, k := range []string{"wrote"} {
		if _, ok := got[k]; ok {
			t.Errorf("job wrote outside its scratch directory:\n%s", res.stdout)
		}
	}
	for _, p := range []string{"/etc/harrier-escape", "/usr/harrier-escape", filepath.Join(outside, "escape"), "/tmp/private"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s exists on the host", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "result.txt")); err != nil || string(b) != "data\n" {
		t.Errorf("scratch result = %q, %v", b, err)
	}
}

func TestMemoryLimitHolds(t *testing.T) {
	r := testRunner(t, nil)
	// python3 or not: head -c from /dev/zero into a shell variable grows
	// the shell's memory without bound.
	res := runJob(t, r, `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`, func(task *Task) { task.MemoryMB = 32 })
	if res.exit.HoldCode != HoldCodeOutOfResources {
		t.Fatalf("exit %+v, want a hold for memory", res.exit)
	}
	if !strings.HasPrefix(res.exit.HoldReason, "Job has gone over memory limit of 32 megabytes. Peak usage: ") {
		t.Errorf("hold reason %q", res.exit.HoldReason)
	}
	if res.exit.Usage.MaxRSSBytes < 16<<20 {
		t.Errorf("peak memory %d, want near the 32 MiB limit", res.exit.Usage.MaxRSSBytes)
	}
}

func TestForkBombContained(t *testing.T) {
	const limit = 64
	r := testRunner(t, func(c *Config) { c.PidsLimit = limit })
	// PID 1 forks once and waits; the bomb below it forks without end
	// until forks are refused. A shell that cannot fork dies, so the bomb
	// may burn out on its own, at once on a busy machine: PID 1 then
	// sleeps, keeping the cgroup (and its refusal count) to be read.
	s := startJob(t, r, &Task{ID: "6.0", Path: "/bin/sh", Args: []string{"-c",
		`sh -c 'b() { b & b & wait; }; b' 2>/dev/null & wait; exec sleep 600`}})
	st, err := s.job.c.State()
	if err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(st.CgroupPaths["pids"], "pids.events")
	// Watch it for a second, and longer until the kernel has refused a
	// fork: never more than the limit may be seen.
	most, refused := 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 50 || (refused == 0 && time.Now().Before(deadline)); i++ {
		pids, err := s.job.c.Processes()
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(pids))
		refused = pidsRefused(t, events)
		time.Sleep(20 * time.Millisecond)
	}
	if most > limit {
		t.Errorf("the bomb had %d processes, more than the limit %d", most, limit)
	}
	if refused == 0 {
		t.Errorf("no fork was refused (at most %d processes seen): the limit %d was never reached", most, limit)
	}
	t.Logf("at most %d processes seen; %d forks refused", most, refused)
	if err := s.job.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	// The slot is still healthy.
	if res := runJob(t, r, "exit 3", nil); res.exit.Code != 3 {
		t.Errorf("after the bomb: %+v", res.exit)
	}
}

// pidsRefused reads how many forks the pids controller has refused
// ("max N" in pids.events).
func pidsRefused(t *testing.T, events string) int {
	t.Helper()
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatalf("read the pids cgroup's events: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "max "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%s: %q: %v", events, l, err)
			}
			return n
		}
	}
	t.Fatalf("%s has no max line: %q", events, b)
	return 0
}

func TestSignalSuspendContinueUsage(t *testing.T) {
	r := testRunner(t, nil)
	scratch := t.TempDir()
	// A shell that handles TERM (PID 1 ignores signals it does not handle)
	// and a busy child, which is ready once it has used some processor
	// time for certain: cgroup v1 counts it in ticks of 10 ms, and a
	// loaded machine may give the child none before it is suspended.
	s := startJob(t, r, &Task{ID: "2.0", Path: "/bin/sh", ScratchDir: scratch, Args: []string{"-c",
		`trap 'echo term; exit 7' TERM; (i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; echo started > ready; while :; do :; done) & while :; do sleep 0.05; done`}})
	waitFile(t, filepath.Join(scratch, "ready"))
	if err := s.job.Suspend(); err != nil {
		t.Fatal(err)
	}
	u1, err := s.job.Usage()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	u2, _ := s.job.Usage()
	if u2.UserCPU+u2.SysCPU != u1.UserCPU+u1.SysCPU {
		t.Errorf("CPU time grew while suspended: %+v -> %+v", u1, u2)
	}
	if err := s.job.Continue(); err != nil {
		t.Fatal(err)
	}
	if u2.MemoryBytes == 0 {
		t.Errorf("usage %+v: no memory", u2)
	}
	if err := s.job.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := s.wait(t)
	if res.exit.Code != 7 || !strings.Contains(res.stdout, "term") {
		t.Errorf("exit %+v stdout %q, want 7 after TERM", res.exit, res.stdout)
	}
	if res.exit.Usage.UserCPU+res.exit.Usage.SysCPU == 0 {
		t.Errorf("no CPU time in %+v", res.exit.Usage)
	}
}

// TestSuspendOnABusyMachine: a job of busy processes that fork is
// suspended every time, though every core of the machine is kept busy
// meanwhile (libcontainer's own freeze on cgroup v1 gave up within 200 ms
// there, and the job ran on), and its CPU time stands still until it is
// continued.
func TestSuspendOnABusyMachine(t *testing.T) {
	r := testRunner(t, nil)
	scratch := t.TempDir()
	s := startJob(t, r, &Task{ID: "3.0", Path: "/bin/sh", ScratchDir: scratch, Args: []string{"-c",
		`(while :; do :; done) & (while :; do /bin/true; done) & echo started > ready; while :; do :; done`}})
	waitFile(t, filepath.Join(scratch, "ready"))
	for range runtime.NumCPU() {
		burn := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := burn.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { burn.Process.Kill(); burn.Wait() }()
	}
	for i := range 5 {
		if err := s.job.Suspend(); err != nil {
			t.Fatalf("suspend %d: %v", i, err)
		}
		u1, err := s.job.Usage()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if u2, _ := s.job.Usage(); u2.UserCPU+u2.SysCPU != u1.UserCPU+u1.SysCPU {
			t.Errorf("suspend %d: CPU time grew while suspended: %+v -> %+v", i, u1, u2)
		}
		if err := s.job.Continue(); err != nil {
			t.Fatalf("continue %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.job.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

func TestTermEndsAPlainLoop(t *testing.T) {
	r := testRunner(t, nil)
	scratch := t.TempDir()
	// PID 1 has no TERM handler: in a pid namespace the kernel would drop
	// the signal; the job must still end as an ordinary process would,
	// taking no step after it: not even when its sleep dies first.
	s := startJob(t, r, &Task{ID: "7.0", Path: "/bin/sh", ScratchDir: scratch, Args: []string{"-c",
		`echo x > ready; while :; do sleep 5; echo step >> steps; done`}})
	waitFile(t, filepath.Join(scratch, "ready"))
	time.Sleep(100 * time.Millisecond) // into its sleep
	if err := s.job.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if res := s.wait(t); res.exit.Signal != int(unix.SIGTERM) {
		t.Errorf("exit %+v, want ended by SIGTERM", res.exit)
	}
	if _, err := os.Stat(filepath.Join(scratch, "steps")); err == nil {
		t.Error("the loop took a step after its TERM")
	}
}

func TestKillLeavesNothing(t *testing.T) {
	r := testRunner(t, nil)
	scratch := t.TempDir()
	s := startJob(t, r, &Task{ID: "3.0", Path: "/bin/sh", ScratchDir: scratch, Args: []string{"-c",
		`sleep 600 & sleep 600 & echo x > ready; wait`}})
	waitFile(t, filepath.Join(scratch, "ready"))
	if err := s.job.Suspend(); err != nil { // even a frozen job dies
		t.Fatal(err)
	}
	pid := s.job.Pid()
	if err := s.job.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := s.wait(t)
	if res.exit.Signal != int(unix.SIGKILL) {
		t.Errorf("exit %+v, want killed", res.exit)
	}
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("job process %d still exists", pid)
	}
	if cgroupExists(slotCgroupPath(r.cfg.StateRoot, r.cfg.Slot) + "/" + containerID("slot1", "3.0")) {
		t.Error("container cgroup left behind")
	}
	if _, err := os.Stat(filepath.Join(containersDir(r.cfg.StateRoot, r.cfg.Slot), containerID("slot1", "3.0"))); err == nil {
		t.Error("container state left behind")
	}
}

func TestCleanupAfterDeadStarter(t *testing.T) {
	r := testRunner(t, nil)
	scratch := t.TempDir()
	s := startJob(t, r, &Task{ID: "4.0", Path: "/bin/sh", ScratchDir: scratch, Args: []string{"-c",
		`sleep 600 & echo x > ready; wait`}})
	waitFile(t, filepath.Join(scratch, "ready"))
	pid := s.job.Pid()
	// The starter dies without waiting: the startd's cleanup must do.
	if err := CleanupAll(r.cfg.StateRoot); err != nil {
		t.Fatal(err)
	}
	s.job.p.Wait()
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("job process %d survived cleanup", pid)
	}
	if cgroupExists(slotCgroupPath(r.cfg.StateRoot, r.cfg.Slot)) {
		t.Error("slot cgroup survived cleanup")
	}
}

func TestBadInput(t *testing.T) {
	r := testRunner(t, nil)
	dir := t.TempDir()
	noexec := filepath.Join(dir, "data.txt")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		name string
		task Task
		want string
	}{
		{"missing", Task{Path: filepath.Join(dir, "nope")}, "no such file"},
		{"not executable", Task{Path: noexec}, "permission denied"},
		{"directory", Task{Path: dir}, "is a directory"},
		{"bad dir", Task{Path: "/bin/true", Dir: filepath.Join(dir, "missing")}, "Bad working directory"},
		{"tiny memory", Task{Path: "/bin/true", MemoryMB: 1}, "Cannot meet request_memory"},
		{"too many cpus", Task{Path: "/bin/true", Cpus: 100000}, "Cannot meet request_cpus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := c.task
			task.ID = "5.0"
			if task.Dir == "" {
				task.Dir = dir
			}
			_, err := r.Start(context.Background(), &task)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Start: %v, want an error with %q", err, c.want)
			}
		})
	}
	// The slot is still healthy.
	if res := runJob(t, r, "exit 0", nil); res.exit.Code != 0 {
		t.Errorf("after bad input: %+v", res.exit)
	}
}

func TestConfigRefusesRoot(t *testing.T) {
	if _, err := NewRunner(Config{StateRoot: t.TempDir(), Slot: "slot1", Policy: Policy{User: "root"}}); err == nil {
		t.Error("root slot user accepted without AllowRoot")
	}
	if _, err := NewRunner(Config{StateRoot: t.TempDir(), Slot: "slot1", Policy: Policy{User: "root", AllowRoot: true}}); err != nil {
		t.Error(err)
	}
	if _, err := NewRunner(Config{StateRoot: "rel", Slot: "slot/1"}); err == nil {
		t.Error("bad state root and slot accepted")
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sandbox")
	if p, err := ReadPolicy(root); err != nil || !reflect.DeepEqual(p, Policy{}) {
		t.Fatalf("no policy saved: %+v, %v; want defaults", p, err)
	}
	want := Policy{User: "daemon", SlotUsers: map[string]string{"slot2": "bin"}, PidsLimit: 99, CPUQuota: true, DiskFactor: -1}
	if err := WritePolicy(root, want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPolicy(root); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadPolicy = %+v, %v; want %+v", got, err, want)
	}
	os.WriteFile(filepath.Join(root, policyFile), []byte("{"), 0o600)
	if _, err := ReadPolicy(root); err == nil {
		t.Error("a broken policy file read without error")
	}
}

// TestSlotUsers: a slot's own user (SLOT<N>_USER) takes SLOT_USER's
// place for that slot's plain-process jobs, and its dynamic slots'
// unless one has its own, but not for jobs in containers; CheckUsers
// refuses a user that does not exist and root unless allowed.
func TestSlotUsers(t *testing.T) {
	p := Policy{User: "daemon", SlotUsers: map[string]string{"slot2": "bin", "slot2_3": "sys"}}
	for slot, want := range map[string]string{"slot1": "daemon", "slot2": "bin", "slot2_1": "bin", "slot2_3": "sys", "slot1_2": "daemon"} {
		if got := p.slotUserName(slot); got != want {
			t.Errorf("%s runs as %s, want %s", slot, got, want)
		}
	}
	if got := (Policy{}).slotUserName("slot1"); got != defaultUser {
		t.Errorf("no users named: slot1 runs as %s, want %s", got, defaultUser)
	}
	r, err := NewRunner(Config{StateRoot: t.TempDir(), Slot: "slot2", Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if uid, _ := r.User(); uid != 1 { // daemon, on Debian
		t.Errorf("slot2's container runner runs jobs as uid %d, want daemon's (SLOT_USER), 1", uid)
	}
	if uid, _, err := SlotUser(p, "slot2_1"); err != nil || uid != 2 { // bin
		t.Errorf("slot2_1's plain-process jobs run as uid %d (%v), want bin's, 2", uid, err)
	}
	if err := p.CheckUsers(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Policy{
		{SlotUsers: map[string]string{"slot3": "no-such-user-harrier"}},
		{SlotUsers: map[string]string{"slot3": "root"}},
		{SlotUsers: map[string]string{"slot/3": "bin"}},
		{User: "root"},
	} {
		if err := bad.CheckUsers(); err == nil {
			t.Errorf("CheckUsers accepted %+v", bad)
		}
	}
	if err := (Policy{SlotUsers: map[string]string{"slot3": "root"}, AllowRoot: true}).CheckUsers(); err != nil {
		t.Errorf("root allowed: %v", err)
	}
}

func TestRootJobsWhenAllowed(t *testing.T) {
	r := testRunner(t, func(c *Config) { c.User, c.AllowRoot = "root", true })
	res := runJob(t, r, `id -u; touch /etc/harrier-escape 2>/dev/null && echo wrote`, nil)
	if strings.TrimSpace(res.stdout) != "0" {
		t.Errorf("stdout %q, want uid 0 and a read-only host", res.stdout)
	}
}

func TestDiskLimitHolds(t *testing.T) {
	r := testRunner(t, func(c *Config) { c.DiskInterval = 20 * time.Millisecond })
	res := runJob(t, r, `head -c 2000000 /dev/zero > big; sleep 30`, func(task *Task) { task.DiskKB = 100 })
	if res.exit.HoldCode != HoldCodeOutOfResources || !strings.HasPrefix(res.exit.HoldReason, "Job has gone over disk limit of 100 kilobytes.") {
		t.Errorf("exit %+v, want a hold for disk", res.exit)
	}
	// The check may catch the file part written: what it reports is what
	// broke the limit.
	if res.exit.Usage.DiskBytes <= 100*1024 {
		t.Errorf("disk usage %d, want over the 100 KB limit that held the job", res.exit.Usage.DiskBytes)
	}
}

// waitFile waits for a job to create a file.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job did not create %s", path)
}

// BenchmarkContainerTrue measures a job's whole life in a container:
// create, start, run /bin/true, wait and remove.
func BenchmarkContainerTrue(b *testing.B) {
	r := testRunner(b, nil)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		task := &Task{ID: "1.0", Path: "/bin/true", Dir: dir, ScratchDir: dir}
		res := startJob(b, r, task).wait(b)
		if res.exit.Code != 0 {
			b.Fatalf("exit %+v", res.exit)
		}
	}
}

// A limit above the starter's own hard limit is held to it where the
// starter may not raise it, and asked for whole where it may. (Any
// resource will do: the open files' hard limit is finite.)
func TestContainerRlimitsHeldToTheHardLimit(t *testing.T) {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	if own.Max == unix.RLIM_INFINITY {
		t.Skip("this machine sets no hard limit on open files to go above")
	}
	got := containerRlimits([]Rlimit{{Resource: unix.RLIMIT_NOFILE, Limit: own.Max + 1}, {Resource: unix.RLIMIT_CORE, Limit: 0}})
	want := own.Max
	if mayRaiseLimits() {
		want = own.Max + 1
	}
	if got[0].Hard != want || got[0].Soft != want || got[1].Hard != 0 || got[1].Soft != 0 {
		t.Errorf("limits %+v, want %d then 0 (own hard limit %d, may raise %v)", got, want, own.Max, mayRaiseLimits())
	}
}

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/sandbox"
)

// startContainerPool starts a personal pool whose startd runs every job in
// a container.
func startContainerPool(t *testing.T) *testPool {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	return startPoolWith(t, 1, "SANDBOX = container")
}

func TestSandboxedJobs(t *testing.T) {
	p := startContainerPool(t)
	if m := p.jobs(t, "status"); len(m) == 0 || m[0]["HarrierSandbox"] != "container" {
		t.Errorf("machine ad: HarrierSandbox = %v, want container", m)
	}
	// harrier-init, built beside the test binary by TestMain as it is
	// beside harrier, became the containers' init.
	logs, _ := filepath.Glob(filepath.Join(p.dir, "log", "*.log"))
	installed := false
	for _, l := range logs {
		installed = installed || strings.Contains(mustRead(t, l), `msg="container init installed"`)
	}
	if !installed {
		t.Errorf("no startd log of %v says it installed harrier-init", logs)
	}
	dir := copyExample(t, "unix-tools")
	_ = os.Chmod(dir, 0o777)
	outside := t.TempDir()
	writeFile(t, filepath.Join(dir, "probe.sh"), `#!/bin/sh
date +%s.%N > /dev/stderr
echo "procs $(ls /proc | grep -c '^[0-9]')"
echo "user $(id -un)"
touch `+outside+`/escape 2>/dev/null && echo "wrote outside"
touch /etc/escape 2>/dev/null && echo "wrote etc"
echo "done"
`, 0o755)

	// Unmodified sort, awk and python3.
	wf := p.submit(t, dir, "wordfreq.sub", mustRead(t, filepath.Join(dir, "wordfreq.sub")))
	// A job that looks around and tries to escape.
	pr := p.submit(t, dir, "probe.sub", "executable = probe.sh\noutput = probe.out\nerror = probe.err\nlog = probe.log\nqueue\n")
	// A job over its memory limit.
	mh := p.submit(t, dir, "memhog.sub", mustRead(t, filepath.Join(dir, "memhog.sub")))

	for _, c := range []int{wf, pr} {
		id := fmt.Sprintf("%d.0", c)
		if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
	}
	if out := mustRead(t, filepath.Join(dir, "wordfreq.out")); !strings.Contains(out, "the        4") || !strings.Contains(out, "total 15") {
		t.Errorf("wordfreq.out:\n%s\nwordfreq.err:\n%s", out, mustRead(t, filepath.Join(dir, "wordfreq.err")))
	}
	probe := mustRead(t, filepath.Join(dir, "probe.out"))
	if strings.Contains(probe, "wrote") || !strings.Contains(probe, "user nobody") || !strings.Contains(probe, "done") {
		t.Errorf("probe.out:\n%s", probe)
	}
	for _, l := range strings.Split(probe, "\n") {
		if n, ok := strings.CutPrefix(l, "procs "); ok {
			if k, _ := strconv.Atoi(n); k > 5 {
				t.Errorf("the job sees %d processes", k)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
		t.Error("the job wrote outside its scratch directory")
	}
	reportStartLatency(t, p, probe, mustRead(t, filepath.Join(dir, "probe.err")))

	mid := fmt.Sprintf("%d.0", mh)
	eventually(t, 60*time.Second, "the memory hog to be held", func() bool { return p.jobStatus(t, mid) == 5 })
	q := p.jobs(t, "q", mid)
	if r, _ := q[0]["HoldReason"].(string); !strings.HasPrefix(r, "Job has gone over memory limit of 32 megabytes. Peak usage:") {
		t.Errorf("HoldReason = %q", r)
	}
	if c, _ := q[0]["HoldReasonCode"].(float64); c != 34 {
		t.Errorf("HoldReasonCode = %v, want 34", q[0]["HoldReasonCode"])
	}

	// A removed job leaves no process behind.
	sl := p.submit(t, dir, "sleep.sub", "executable = /bin/sleep\narguments = 31337\nlog = sleep.log\nqueue\n")
	sid := fmt.Sprintf("%d.0", sl)
	eventually(t, 30*time.Second, "the sleeper to run", func() bool { return len(sleepers()) > 0 })
	p.must(t, "rm", sid)
	eventually(t, 30*time.Second, "the removed job's process to go", func() bool { return len(sleepers()) == 0 })
	eventually(t, 30*time.Second, "the slot to be free", func() bool { return strings.Contains(p.must(t, "status", "-af", "State"), "Unclaimed") })

	// A starter killed under its job: the startd cleans up after it.
	sl = p.submit(t, dir, "sleep2.sub", "executable = /bin/sleep\narguments = 31337\nlog = sleep2.log\nqueue\n")
	eventually(t, 30*time.Second, "the second sleeper to run", func() bool { return len(sleepers()) > 0 })
	starterPid := parentOf(t, sleepers()[0])
	if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", starterPid)); !strings.HasSuffix(string(cmd), "\x00starter\x00") {
		t.Fatalf("the job's parent %d is %q, not a starter", starterPid, cmd)
	}
	if err := syscall.Kill(starterPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the orphaned job's process to go", func() bool { return len(sleepers()) == 0 })
	// The agent runs the interrupted job again; removing it leaves the
	// startd nothing to keep. The dead starter's container must be gone
	// too (its init is reaped by whoever adopted it first).
	p.must(t, "rm", fmt.Sprintf("%d.0", sl))
	exec := filepath.Join(p.dir, "execute")
	eventually(t, 30*time.Second, "the startd to remove the dead starter's container", func() bool {
		return len(containerStates(exec)) == 0
	})
}

// containerStates lists the state directories of the containers of the
// startds whose execute directories are in exec: in the state root, or
// in the sandbox's directory on a memory file system, named by a hash
// of the state root.
func containerStates(exec string) []string {
	roots, _ := filepath.Glob(filepath.Join(exec, "*", "sandbox"))
	var left []string
	for _, root := range roots {
		sum := sha256.Sum256([]byte(filepath.Clean(root)))
		key := hex.EncodeToString(sum[:6])
		for _, dir := range []string{filepath.Join(root, "containers"), "/run/harrier-sandbox/" + key + "-*", "/dev/shm/harrier-sandbox/" + key + "-*"} {
			found, _ := filepath.Glob(filepath.Join(dir, "*"))
			left = append(left, found...)
		}
	}
	return left
}

// sleepers lists the pids of the host's processes running "sleep 31337".
func sleepers() []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, _ := os.ReadFile(d)
		if strings.Contains(string(b), "31337") && strings.Contains(string(b), "sleep") {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// parentOf returns a process's parent: for a job's first process, its
// starter.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			ppid, _ := strconv.Atoi(strings.TrimSpace(v))
			return ppid
		}
	}
	t.Fatalf("no parent of %d", pid)
	return 0
}

// reportStartLatency logs the time from the claim's activation (the
// startd's log line) to the job's first instruction (the time it wrote
// first).
func reportStartLatency(t *testing.T, p *testPool, probeOut, probeErr string) {
	first, err := strconv.ParseFloat(strings.TrimSpace(strings.Split(probeErr, "\n")[0]), 64)
	if err != nil {
		t.Logf("no start time from the job: %q", probeErr)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(p.dir, "log", "*.log"))
	var activated time.Time
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "to=Claimed/Busy") {
				continue
			}
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.Before(time.Unix(0, int64(first*1e9))) {
				activated = at // the last activation before the job began
			}
		}
		f.Close()
	}
	if activated.IsZero() {
		t.Log("no claim activation in the startd's log")
		return
	}
	latency := time.Unix(0, int64(first*1e9)).Sub(activated)
	t.Logf("job start latency, claim activation to first instruction: %v", latency.Round(time.Millisecond))
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScratchDiskLimit runs three jobs past the sandbox's first measures
// of their scratch directories (every DISK_CHECK_INTERVAL). The one
// without request_disk writes a few KiB, more than twice its default
// request (the size of its executable), and is not held: that default is
// an estimate, not a limit. The one with request_disk = 100KB writes
// 2 MiB and is held. The third asks for nothing and writes 6 MiB, more
// than the machine's SCRATCH_LIMIT: it is held too.
func TestScratchDiskLimit(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	p := startPoolWith(t, 1, "SANDBOX = container\nNUM_SLOTS = 3\nDISK_CHECK_INTERVAL = 1\nSCRATCH_LIMIT = 4096\n")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	writeFile(t, filepath.Join(dir, "write.sh"), `#!/bin/sh
head -c "$1" /dev/zero > "$_CONDOR_SCRATCH_DIR/data"
sleep 5
echo "wrote $1"
`, 0o755)
	small := p.submit(t, dir, "small.sub", "executable = write.sh\narguments = 8192\noutput = small.out\nlog = small.log\nqueue\n")
	big := p.submit(t, dir, "big.sub", "executable = write.sh\narguments = 2097152\nrequest_disk = 100KB\nlog = big.log\nqueue\n")
	greedy := p.submit(t, dir, "greedy.sub", "executable = write.sh\narguments = 6291456\nlog = greedy.log\nqueue\n")

	sid, bid := fmt.Sprintf("%d.0", small), fmt.Sprintf("%d.0", big)
	if out, code := p.harrier(t, "wait", "--timeout", "180", sid); code != 0 {
		t.Fatalf("wait %s: exit %d: %s\n%v", sid, code, out, p.jobs(t, "history", sid))
	}
	if out := mustRead(t, filepath.Join(dir, "small.out")); out != "wrote 8192\n" {
		t.Errorf("small.out = %q", out)
	}
	eventually(t, 120*time.Second, "the job over its request_disk to be held", func() bool { return p.jobStatus(t, bid) == 5 })
	q := p.jobs(t, "q", bid)
	if r, _ := q[0]["HoldReason"].(string); !strings.HasPrefix(r, "Job has gone over disk limit of 100 kilobytes.") {
		t.Errorf("HoldReason = %q", r)
	}
	if c, _ := q[0]["HoldReasonCode"].(float64); c != sandbox.HoldCodeOutOfResources {
		t.Errorf("HoldReasonCode = %v, want %d", q[0]["HoldReasonCode"], sandbox.HoldCodeOutOfResources)
	}
	gid := fmt.Sprintf("%d.0", greedy)
	eventually(t, 120*time.Second, "the job over the machine's scratch limit to be held", func() bool { return p.jobStatus(t, gid) == 5 })
	q = p.jobs(t, "q", gid)
	if r, _ := q[0]["HoldReason"].(string); !strings.HasPrefix(r, "Job has gone over disk limit of 4096 kilobytes.") {
		t.Errorf("HoldReason = %q", r)
	}
}

// TestProcessJobsRunAsTheSlotUser: where jobs run as plain processes (no
// container), a root startd still never runs them as root. alice's job
// runs as the slot user, nobody, and reaches neither bob's private file
// nor root's, nor writes outside its scratch directory; its outputs come
// home to alice all the same. What it left running in a session of its
// own, which would see the slot's next job, ends with it (its cgroup).
func TestProcessJobsRunAsTheSlotUser(t *testing.T) {
	p := startPoolFrom(t, publicBinary(t), 1, "SANDBOX = process")
	alice, bob := newUser(t), newUser(t)
	secret := filepath.Join(bob.HomeDir, "secret.txt")
	writeFile(t, secret, "bob's\n", 0o600)
	bu, bg := lookupIDs(t, bob.Username)
	chownAll(t, bob.HomeDir, bu, bg)
	outside := t.TempDir()
	_ = os.Chmod(outside, 0o777)
	dir := filepath.Join(alice.HomeDir, "job")
	writeFile(t, filepath.Join(dir, "probe.sh"), `#!/bin/sh
echo "uid $(id -u)"
cat `+secret+` 2>/dev/null && echo "read bob's secret"
head -c 1 /etc/shadow >/dev/null 2>&1 && echo "read /etc/shadow"
touch /etc/harrier-escape 2>/dev/null && echo "wrote /etc"
setsid sleep 4322 </dev/null >/dev/null 2>&1 &
echo done > made.txt
echo "done"
`, 0o755)
	au, ag := lookupIDs(t, alice.Username)
	chownAll(t, dir, au, ag)
	c := p.submitAs(t, alice.Username, dir, "probe.sub", "executable = probe.sh\noutput = probe.out\nshould_transfer_files = YES\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
		t.Fatalf("wait %s: exit %d: %s (%v)", id, code, out, p.jobs(t, "q", id))
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustRead(t, filepath.Join(dir, "probe.out")), "uid "+nobody.Uid+"\ndone\n"; got != want {
		t.Errorf("alice's process-mode job said %q, want %q", got, want)
	}
	if _, err := os.Stat("/etc/harrier-escape"); err == nil {
		os.Remove("/etc/harrier-escape")
		t.Error("a process-mode job wrote /etc")
	}
	if got := mustRead(t, filepath.Join(dir, "made.txt")); got != "done\n" {
		t.Errorf("the job's output made.txt came home as %q", got)
	}
	if stillRunning(t, "sleep", "4322") {
		t.Error("what alice's job left running outlived it")
	}
}

// TestSlotUsersKeepProcessJobsApart: where jobs run as plain processes,
// each slot runs its jobs as a user of its own (SLOT<N>_USER), so that
// one job cannot reach another's, as it could were both the one slot
// user: alice's job, beside bob's running job, neither reads bob's
// file through his job's /proc entry nor signals any of his processes.
// What bob's job left running in a session of its own (a daemon, which
// would see the slot's next job) ends with it.
func TestSlotUsersKeepProcessJobsApart(t *testing.T) {
	slotUser1, slotUser2 := newUser(t), newUser(t)
	p := startPoolFrom(t, publicBinary(t), 1, "SANDBOX = process\nNUM_SLOTS = 2\nSLOT1_USER = "+slotUser1.Username+"\nslot2_user = "+slotUser2.Username)
	alice, bob := newUser(t), newUser(t)
	marker := filepath.Join(t.TempDir(), "done")
	if err := os.Chmod(filepath.Dir(marker), 0o755); err != nil {
		t.Fatal(err)
	}
	bDir := filepath.Join(bob.HomeDir, "job")
	writeFile(t, filepath.Join(bDir, "wait.sh"), `#!/bin/sh
echo "bob's secret" > secret.txt
echo "uid $(id -u)"
setsid sleep 4321 </dev/null >/dev/null 2>&1 &
i=0
while [ ! -e "$1" ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
`, 0o755)
	bu, bg := lookupIDs(t, bob.Username)
	chownAll(t, bDir, bu, bg)
	b := p.submitAs(t, bob.Username, bDir, "wait.sub", "executable = wait.sh\narguments = "+marker+"\noutput = wait.out\nshould_transfer_files = YES\nqueue\n")
	eventually(t, 60*time.Second, "bob's job to run", func() bool {
		m, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "scratch.*", "secret.txt"))
		return len(m) == 1
	})

	aDir := filepath.Join(alice.HomeDir, "job")
	writeFile(t, filepath.Join(aDir, "probe.sh"), `#!/bin/sh
echo "uid $(id -u)"
group=$(cut -d' ' -f5 /proc/$$/stat)
for d in /proc/[0-9]*; do
	pid=${d#/proc/}
	cat "$d/cwd/secret.txt" 2>/dev/null && echo "read through $d"
	if kill -0 "$pid" 2>/dev/null && [ "$(cut -d' ' -f5 "$d/stat" 2>/dev/null)" != "$group" ]; then
		echo "may signal $pid: $(cat "$d/cmdline" | tr '\0' ' ')"
	fi
done
echo done
`, 0o755)
	au, ag := lookupIDs(t, alice.Username)
	chownAll(t, aDir, au, ag)
	a := p.submitAs(t, alice.Username, aDir, "probe.sub", "executable = probe.sh\noutput = probe.out\nshould_transfer_files = YES\nqueue\n")
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", a)); code != 0 {
		t.Fatalf("wait for alice's job: exit %d: %s", code, out)
	}
	writeFile(t, marker, "", 0o644)
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", b)); code != 0 {
		t.Fatalf("wait for bob's job: exit %d: %s", code, out)
	}
	aOut, bOut := mustRead(t, filepath.Join(aDir, "probe.out")), mustRead(t, filepath.Join(bDir, "wait.out"))
	uids := map[string]bool{}
	for _, out := range []string{aOut, bOut} {
		uid, _, _ := strings.Cut(strings.TrimPrefix(out, "uid "), "\n")
		uids[uid] = true
	}
	if !uids[slotUser1.Uid] || !uids[slotUser2.Uid] {
		t.Errorf("the jobs ran as %v, want the two slots' users %s and %s", uids, slotUser1.Uid, slotUser2.Uid)
	}
	if want := "uid "; !strings.HasPrefix(aOut, want) || strings.Count(aOut, "\n") != 2 || !strings.HasSuffix(aOut, "\ndone\n") {
		t.Errorf("alice's job, beside bob's, reached it:\n%s", aOut)
	}
	if stillRunning(t, "sleep", "4321") {
		t.Error("what bob's job left running outlived it")
	}
}

// stillRunning reports whether a process of the command line args is
// still there 10 s from now.
func stillRunning(t *testing.T, args ...string) bool {
	t.Helper()
	cmdline := strings.Join(args, "\x00") + "\x00"
	running := func() bool {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, _ := os.ReadFile(p); string(b) == cmdline {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(10 * time.Second); running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			return true
		}
	}
	return false
}

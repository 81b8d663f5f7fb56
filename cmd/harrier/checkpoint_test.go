package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/checkpoint"
)

// counts reads count.txt as numbers.
func counts(t *testing.T, dir string) []int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "count.txt"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("count.txt holds %q", f)
		}
		out = append(out, n)
	}
	return out
}

// TestMigration vacates a counting job of an ordinary user from one
// startd of a pool with two; it is checkpointed, its image stored where
// only its owner can read it, restored by the other startd, and it finishes
// with its count unbroken: no number lost or repeated, in the file it
// appends to through iofs and in its output.
func TestMigration(t *testing.T) {
	bin := publicBinary(t)
	h := &hostile{testPool: startPoolFrom(t, bin, 2, ""), bin: bin}
	alice, bob := newUser(t), newUser(t)
	work := copyExample(t, "migration")
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	uid, _ := strconv.Atoi(alice.Uid)
	gid, _ := strconv.Atoi(alice.Gid)
	if err := filepath.Walk(work, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
	tool := func(user string, args ...string) string {
		t.Helper()
		out, code := h.tool(t, user, args...)
		if code != 0 {
			t.Fatalf("%s as %s: exit %d: %s", strings.Join(args, " "), user, code, out)
		}
		return out
	}
	tool(alice.Username, "submit", filepath.Join(work, "count.sub"))
	eventually(t, 60*time.Second, "the job to count past 8", func() bool { return len(counts(t, work)) >= 8 })
	first := strings.TrimSpace(tool(alice.Username, "q", "-af", "RemoteHost"))
	start := time.Now()
	tool(alice.Username, "vacate", "1.0")
	img := filepath.Join(h.testPool.dir, "spool", "checkpoints", alice.Username, "1.0.ckpt")
	eventually(t, 60*time.Second, "the job to run elsewhere", func() bool {
		host := strings.TrimSpace(tool(alice.Username, "q", "-af", "RemoteHost"))
		return host != "" && host != "undefined" && host != first
	})
	t.Logf("vacate to running elsewhere: %s", time.Since(start).Round(time.Millisecond))
	// The image is its owner's alone: another user cannot read it.
	if _, err := os.Stat(img); err != nil {
		t.Errorf("no image where the agent keeps alice's: %v", err)
	} else if out, code := asUser(t, "/bin/cat", bob.Username, nil, img); code == 0 {
		t.Errorf("bob read alice's checkpoint image (%d bytes)", len(out))
	}
	if out, code := h.tool(t, alice.Username, "wait", "--timeout", "120", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	checkCounted(t, work, 40)
	hist := h.jobs(t, "history", "1.0")[0]
	if n, _ := hist["NumCkpts"].(float64); n < 1 || hist["LastRemoteHost"] == first {
		t.Errorf("history: NumCkpts %v, LastRemoteHost %v (started on %s)", hist["NumCkpts"], hist["LastRemoteHost"], first)
	}
	t.Logf("migrated from %s to %v; frozen %v s, image %v bytes compressed", first, hist["LastRemoteHost"], hist["LastCkptFrozenTime"], hist["LastCkptSize"])
	log, _ := os.ReadFile(filepath.Join(work, "count.log"))
	for _, want := range []string{"003 (001.000.000)", "Job was checkpointed.", "004 (001.000.000)", "(1) Job was checkpointed.", "005 (001.000.000)"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("event log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("the image outlived the job: %v", err)
	}
	checkPreCopy(t, h.testPool.dir)
}

// checkPreCopy checks that the starters' checkpoints made pre-dumps just
// where CRIU says this machine tracks dirty memory: elsewhere each is one
// full dump, as before pre-copy.
func checkPreCopy(t *testing.T, poolDir string) {
	t.Helper()
	f, err := checkpoint.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(poolDir, "execute", "*", "starter.*.log"))
	var sent []string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, "checkpoint sent") {
				sent = append(sent, line)
			}
		}
	}
	if len(sent) == 0 {
		t.Fatalf("no starter logged a checkpoint sent (logs %v)", logs)
	}
	for _, line := range sent {
		if none := strings.Contains(line, "pre_dumps=0 "); none == f.PreCopy {
			t.Errorf("pre-copy supported: %v, yet the starter logged %s", f.PreCopy, line)
		}
	}
}

// TestResumeFromLastCheckpoint kills a job's starter between periodic
// checkpoints: the job runs again from its last checkpoint, not from the
// start. Then a corrupted image is refused, and the job starts afresh (the
// default) or goes on hold (OnRestoreFailure = "hold").
func TestResumeFromLastCheckpoint(t *testing.T) {
	p := startPoolWith(t, 1, "")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	for _, f := range []string{"count.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "migration", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b), 0o755)
	}
	c := p.submit(t, dir, "count.sub", "executable = count.sh\narguments = 400\ncheckpoint_interval = 3\noutput = count.out\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "two checkpoints", func() bool {
		ads := p.jobs(t, "q", id)
		n, _ := ads[0]["NumCkpts"].(float64)
		return n >= 2
	})
	// Halfway to the next checkpoint: the job has printed lines since.
	time.Sleep(1500 * time.Millisecond)
	before := len(counts(t, dir))
	// The starter dies (SIGKILL, as if its machine crashed).
	killStarters(t, p)
	eventually(t, 60*time.Second, "the job to run again", func() bool {
		got := counts(t, dir)
		return len(got) > before+4
	})
	got := counts(t, dir)
	// The job runs again from its last checkpoint: what it wrote after
	// that checkpoint it writes again, and it never starts over from 1.
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			if got[i] == 1 || got[i] > got[i-1] {
				t.Fatalf("after the starter was killed the count should go on from the last checkpoint: %v", got)
			}
			t.Logf("killed at %d, resumed from the checkpoint at %d", got[i-1], got[i]-1)
		}
	}
	if starts, _ := p.jobs(t, "q", id)[0]["NumJobStarts"].(float64); starts < 2 {
		t.Fatalf("the job ran %v times; it should have run again after its starter was killed", starts)
	}
	// The restored job appends to its output, from where the output
	// was at its checkpoint: what the killed run printed after it is
	// not there twice.
	if out := outputLines(t, dir); len(out) == 0 || !strings.HasPrefix(out[0], "count 1 ") {
		t.Fatalf("after the restore count.out should still begin with the first run's lines: %q", out)
	}
	for i, l := range outputLines(t, dir) {
		if !strings.HasPrefix(l, fmt.Sprintf("count %d ", i+1)) {
			t.Fatalf("count.out after the restore: line %d is %q, want count %d:\n%s", i+1, l, i+1, mustRead(t, filepath.Join(dir, "count.out")))
		}
	}

	// Corrupt the stored image: the next restore refuses it and the job
	// starts afresh.
	img := holdAndCorrupt(t, p, id)
	if err := os.WriteFile(filepath.Join(dir, "count.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.must(t, "release", id)
	eventually(t, 60*time.Second, "the job to start afresh", func() bool {
		got := counts(t, dir)
		return len(got) >= 2 && got[0] == 1
	})
	// Its output is the fresh run's alone, as after a first start: the
	// earlier runs' lines are gone, not followed by the new ones.
	eventually(t, 60*time.Second, "the fresh run's output", func() bool { return len(outputLines(t, dir)) >= 3 })
	for i, l := range outputLines(t, dir) {
		if !strings.HasPrefix(l, fmt.Sprintf("count %d ", i+1)) {
			t.Fatalf("count.out after the failed restore should hold only the fresh run's lines; line %d is %q", i+1, l)
		}
	}

	// Removed from the queue, the job takes its image with it.
	p.must(t, "rm", id)
	eventually(t, 30*time.Second, "the removed job's image to go", func() bool {
		_, err := os.Stat(img)
		return os.IsNotExist(err) && p.jobStatus(t, id) == 0
	})

	// A job whose submit file says so goes on hold instead, and does not
	// start again.
	hdir := filepath.Join(dir, "hold")
	script, err := os.ReadFile(filepath.Join(dir, "count.sh"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(hdir, "count.sh"), string(script), 0o755)
	_ = os.Chmod(hdir, 0o755)
	c = p.submit(t, hdir, "count.sub", "executable = count.sh\narguments = 400\ncheckpoint_interval = 1\noutput = count.out\n+OnRestoreFailure = \"hold\"\nqueue\n")
	id = fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "a checkpoint", func() bool {
		n, _ := p.jobs(t, "q", id)[0]["NumCkpts"].(float64)
		return n >= 1
	})
	holdAndCorrupt(t, p, id)
	counted := len(counts(t, hdir))
	p.must(t, "release", id)
	eventually(t, 60*time.Second, "the job to go on hold again", func() bool {
		ad := p.jobs(t, "q", id)[0]
		reason, _ := ad["HoldReason"].(string)
		return p.jobStatus(t, id) == 5 && strings.Contains(reason, "Cannot restore the job from its checkpoint")
	})
	if got := counts(t, hdir); len(got) != counted {
		t.Errorf("the job counted on (%d numbers, %d when held): %v", len(got), counted, got)
	}
}

// TestVacateWithoutCheckpointSaysWhy takes away the execute machine's
// means of sealing checkpoints (its key, made readable by others, is
// refused): a vacated job is not checkpointed, its event log says why,
// and it runs again from its start.
func TestVacateWithoutCheckpointSaysWhy(t *testing.T) {
	p := startPoolWith(t, 1, "")
	if err := os.Chmod(filepath.Join(p.dir, "pki", checkpointKeyName), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	script, err := os.ReadFile(filepath.Join("..", "..", "examples", "migration", "count.sh"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "count.sh"), string(script), 0o755)
	c := p.submit(t, dir, "count.sub", "executable = count.sh\narguments = 400\noutput = count.out\nlog = count.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "the job to count past 3", func() bool { return len(counts(t, dir)) > 3 })
	p.must(t, "vacate", id)
	var log string
	eventually(t, 60*time.Second, "the eviction in the event log", func() bool {
		log = readLog(t, filepath.Join(dir, "count.log"))
		return strings.Contains(log, "Job was evicted.")
	})
	for _, want := range []string{"could not be checkpointed", "cannot seal checkpoints", "lets others at it"} {
		if !strings.Contains(log, want) {
			t.Errorf("the event log does not say why the job was not checkpointed (%q):\n%s", want, log)
		}
	}
	if strings.Contains(log, "(1) Job was checkpointed.") {
		t.Errorf("the event log says the job was checkpointed:\n%s", log)
	}
	eventually(t, 60*time.Second, "the job to run again from its start", func() bool {
		got := counts(t, dir)
		return slices.Index(got[1:], 1) >= 0
	})
	p.must(t, "rm", id)
}

// changeCheckpointedInput submits to p a job that counts, one line of an
// input it holds open read per count, with periodic checkpoints and the
// extra submit commands, waits for its first checkpoint, holds it, and
// once its starter is gone makes the input one line longer: CRIU cannot
// restore the job any more. It returns the job's directory and id.
func changeCheckpointedInput(t *testing.T, p *testPool, extra string) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	_ = os.Chmod(dir, 0o755)
	var lines strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	writeFile(t, filepath.Join(dir, "input.txt"), lines.String(), 0o644)
	writeFile(t, filepath.Join(dir, "read.sh"), `#!/bin/sh
exec 3< input.txt
i=0
while [ "$i" -lt 400 ]; do
	i=$((i + 1))
	read -r l <&3
	echo "$i" >> count.txt
	sleep 0.25
done
`, 0o755)
	c := p.submit(t, dir, "read.sub", "executable = read.sh\ncheckpoint_interval = 1\nlog = read.log\n"+extra+"queue\n")
	id = fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "a checkpoint", func() bool {
		n, _ := p.jobs(t, "q", id)[0]["NumCkpts"].(float64)
		return n >= 1
	})
	p.must(t, "hold", id)
	// Once its starter is gone, no periodic checkpoint of the job can
	// still be on its way to record the input as it will be.
	eventually(t, 30*time.Second, "the held job to stop", func() bool { return p.jobStatus(t, id) == 5 && len(starters(p)) == 0 })
	f, err := os.OpenFile(filepath.Join(dir, "input.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one line more\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir, id
}

// TestChangedInputIsNotRestored changes the size of a file a
// checkpointed job holds open for reading: CRIU would refuse to restore
// it, and the shadow says so before the image travels. The job goes on
// hold with that reason, as its submit file asks.
func TestChangedInputIsNotRestored(t *testing.T) {
	p := startPoolWith(t, 1, "")
	dir, id := changeCheckpointedInput(t, p, "+OnRestoreFailure = \"hold\"\n")
	counted := len(counts(t, dir))
	p.must(t, "release", id)
	var reason string
	eventually(t, 60*time.Second, "the job to go on hold for its changed input", func() bool {
		reason, _ = p.jobs(t, "q", id)[0]["HoldReason"].(string)
		return p.jobStatus(t, id) == 5 && strings.Contains(reason, "input changed since the checkpoint")
	})
	if !strings.Contains(reason, filepath.Join(dir, "input.txt")) {
		t.Errorf("hold reason %q does not name the input", reason)
	}
	if got := counts(t, dir); len(got) != counted {
		t.Errorf("the job counted on (%d numbers, %d when held)", len(got), counted)
	}
}

// outputLines returns the complete lines of count.out in dir, which its
// shadow may be writing.
func outputLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "count.out"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	return lines[:len(lines)-1]
}

// holdAndCorrupt holds a job and flips bytes in the middle of its stored
// image; it returns the image's path.
func holdAndCorrupt(t *testing.T, p *testPool, id string) string {
	t.Helper()
	p.must(t, "hold", id)
	// Once its starter is gone, no periodic checkpoint of the job can
	// still be on its way to replace the image.
	eventually(t, 30*time.Second, "the held job to stop", func() bool { return p.jobStatus(t, id) == 5 && len(starters(p)) == 0 })
	img := filepath.Join(p.dir, "spool", "checkpoints", "root", id+".ckpt")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatalf("no stored image: %v", err)
	}
	for i := len(b) / 2; i < len(b)/2+64 && i < len(b); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return img
}

// killStarters SIGKILLs every starter of the pool's startds.
func killStarters(t *testing.T, p *testPool) {
	t.Helper()
	pids := starters(p)
	if len(pids) == 0 {
		t.Fatal("no starter to kill")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// starters returns the pids of the pool's starters.
func starters(p *testPool) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, f := range procs {
		b, _ := os.ReadFile(f)
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[1] == "starter" {
			cwd, _ := os.Readlink(filepath.Join(filepath.Dir(f), "cwd"))
			if strings.HasPrefix(cwd, p.dir) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// netState is what ip shows of a namespace's network: its links,
// addresses and routes.
func netState(t *testing.T, ns string) string {
	t.Helper()
	var b strings.Builder
	for _, what := range [][]string{{"-br", "link"}, {"-br", "addr"}, {"route"}} {
		out, err := exec.Command("ip", append([]string{"-n", ns}, what...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(what, " "), err, out)
		}
		b.Write(out)
	}
	return b.String()
}

// hopScript is the jobs TestMigrationManyHops moves about, by kind. Each
// counts, a number every 0.2 s, in files of its own in its directory
// (the submit side's, through iofs) until the file "stop" appears there.
const hopScript = `#!/bin/sh
count() {
	i=0
	while [ ! -e stop ]; do
		i=$((i + 1))
		echo "$i" >> "$1"
		sleep 0.2
	done
}
case "$1" in
count)
	# Also reads a line per count from an input it holds open (through
	# iofs) and from its standard input (the submit file's input, a file
	# the starter opened outside the container), and prints the count;
	# it holds a lock on a file there.
	exec 3< input.txt
	exec 5>> count.lock
	flock -x 5
	i=0
	while [ ! -e stop ]; do
		i=$((i + 1))
		read -r l <&3
		read -r s
		echo "$i" >> count.txt
		echo "$i $l $s" >> reads.txt
		echo "count $i"
		sleep 0.2
	done ;;
tree)
	# A process tree: a child and a grandchild counting, a pipeline, a
	# multi-threaded program, a server and its client talking over TCP,
	# a program keeping what else jobs hold.
	count tree.child.txt &
	(count tree.grandchild.txt & wait) &
	(i=0
	while [ ! -e stop ]; do
		i=$((i + 1))
		echo "$i"
		sleep 0.2
	done | while read -r n; do echo "$n" >> pipeline.txt; done) &
	python3 hop.py threads &
	python3 hop.py serve &
	python3 hop.py talk &
	python3 hop.py keep &
	count tree.parent.txt
	wait ;;
esac
`

// hopPython is the multi-threaded job (four threads, each counting in a
// file of its own, the process holding an fcntl lock), the server and
// client of the TCP job (the client sends each count and appends the
// server's echo to tcp.txt), and a job keeping what else jobs hold (it
// counts in keep.txt, a 0 where a check failed, and stops counting if its
// timer stops): a file it removed from its directory just after writing
// it (its data still in the kernel's pages at the first dump), a stopped
// child, a UDP socket, a periodic timer (timerfd) it reads less often
// than it expires, a hard link it writes through one name and reads
// through the other, and a file it wrote in its scratch directory
// ($TMPDIR), closed, which it reads again by name.
const hopPython = `import ctypes, fcntl, hashlib, os, signal, socket, struct, subprocess, sys, threading, time

def count(path):
    i = 0
    while not os.path.exists("stop"):
        i += 1
        with open(path, "a") as f:
            f.write("%d\n" % i)
        time.sleep(0.2)

if sys.argv[1] == "threads":
    lock = open("threads.lock", "w")
    fcntl.lockf(lock, fcntl.LOCK_EX)
    ts = [threading.Thread(target=count, args=("threads.%d.txt" % n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
elif sys.argv[1] == "keep":
    removed = open("removed.tmp", "w+b")
    data = os.urandom(1 << 20)
    removed.write(data)
    removed.flush()
    os.unlink("removed.tmp")
    want = hashlib.sha256(data).digest()
    scratch = os.path.join(os.environ["TMPDIR"], "scratch.tmp")
    with open(scratch, "wb") as f:
        f.write(data)
    child = subprocess.Popen(["sleep", "1000"])
    os.kill(child.pid, signal.SIGSTOP)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 5001))
    rx.settimeout(5)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(("127.0.0.1", 5001))
    libc = ctypes.CDLL(None, use_errno=True)
    timer = libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC, every 20 ms
    libc.timerfd_settime(timer, 0, struct.pack("qqqq", 0, 20000000, 0, 20000000), None)
    with open("linked.a", "w") as f:
        f.write("0\n")
    os.link("linked.a", "linked.b")
    linked = open("linked.b", "r+")
    i = 0
    while not os.path.exists("stop"):
        i += 1
        os.read(timer, 8)
        removed.seek(0)
        ok = hashlib.sha256(removed.read()).digest() == want and child.poll() is None
        tx.send(b"%d" % i)
        ok = ok and rx.recv(16) == b"%d" % i
        linked.seek(0)
        linked.write("%d\n" % i)
        linked.flush()
        with open("linked.a") as f:
            ok = ok and f.read() == "%d\n" % i
        try:
            with open(scratch, "rb") as f:
                ok = ok and hashlib.sha256(f.read()).digest() == want
        except OSError:
            ok = False
        with open("keep.txt", "a") as f:
            f.write("%d\n" % (i if ok else 0))
        time.sleep(0.2)
    child.kill()
elif sys.argv[1] == "serve":
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 5000))
    srv.listen()
    c = srv.accept()[0]
    for line in c.makefile("rb", buffering=0):
        c.sendall(line)
else:
    while True:
        try:
            cl = socket.create_connection(("127.0.0.1", 5000))
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    replies = cl.makefile("rb", buffering=0)
    i = 0
    while not os.path.exists("stop"):
        i += 1
        cl.sendall(b"%d\n" % i)
        r = replies.readline()
        with open("tcp.txt", "ab") as f:
            f.write(r)
        time.sleep(0.2)
`

// hopFiles are the files each kind of hop job counts in.
var hopFiles = map[string][]string{
	"count": {"count.txt"},
	"tree": {"tree.parent.txt", "tree.child.txt", "tree.grandchild.txt", "pipeline.txt",
		"threads.0.txt", "threads.1.txt", "threads.2.txt", "threads.3.txt", "tcp.txt", "keep.txt"},
}

// hopKinds are the kinds of hop jobs, in the order they are queued:
// job 1.N is of kind hopKinds[N].
var hopKinds = []string{"count", "tree"}

// hopWork makes the job's directory on n's submit host: hopScript and the
// input its count reads.
func hopWork(t *testing.T, n *netnsPool) string {
	t.Helper()
	work := filepath.Join(n.hosts["submit"].dir, "work")
	var input strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&input, "line%d\n", i)
	}
	writeFile(t, filepath.Join(work, "input.txt"), input.String(), 0o644)
	writeFile(t, filepath.Join(work, "hop.sh"), hopScript, 0o755)
	return work
}

// readCounts reads a file of numbers, one a line, that its job may be
// writing: a last line without its newline is left out.
func readCounts(t *testing.T, path string) []int {
	t.Helper()
	b, _ := os.ReadFile(path)
	var out []int
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[:len(lines)-1] {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("%s holds %q", path, l)
		}
		out = append(out, n)
	}
	return out
}

// TestMigrationManyHops vacates two jobs, both at once, five times from
// one execute host of a netns pool to the other and back: a counting
// script that also reads an input it holds open and its standard input
// (both the submit side's input.txt) and holds a lock, and a process
// tree of a dozen processes holding a pipeline, a multi-threaded program,
// a server and its client talking over TCP on the job's loopback, and a
// program holding a removed file, a stopped child, a UDP socket, a timer
// and a hard link (hopPython). Every
// job runs as the slot user (nobody); each time, both are checkpointed
// and restored on the other host, into a container made afresh there,
// and every count runs on unbroken to the end. The hosts' networks are
// as they were.
func TestMigrationManyHops(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("two of the jobs are python3 programs (scripts/setup installs python3)")
	}
	n := newNetnsPool(t, "submit", "exec1", "exec2")
	n.start("submit", map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd"})
	before := map[string]string{}
	for name, h := range n.hosts {
		before[name] = netState(t, h.ns)
	}

	work := hopWork(t, n)
	writeFile(t, filepath.Join(work, "hop.py"), hopPython, 0o644)
	// Each time the job runs, it must run on the other host.
	writeFile(t, filepath.Join(work, "hop.sub"), `executable   = hop.sh
arguments    = $(kind)
input        = input.txt
output       = $(kind).out
error        = $(kind).err
log          = hop.log
requirements = (MY.LastRemoteHost =?= undefined) || (TARGET.Machine =!= splitslotname(MY.LastRemoteHost)[1])
queue kind in (`+strings.Join(hopKinds, ", ")+`)
`, 0o644)
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if out, code := n.tool("submit", "submit", filepath.Join(work, "hop.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	// where returns the execute host of each job, "" while it is not
	// running.
	where := func() []string {
		out, code := n.tool("submit", "q", "-json")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil {
			t.Fatalf("q -json: exit %d: %s", code, out)
		}
		hosts := make([]string, len(hopKinds))
		for _, ad := range ads {
			proc, _ := ad["ProcId"].(float64)
			remote, _ := ad["RemoteHost"].(string)
			if st, _ := ad["JobStatus"].(float64); st == 2 && int(proc) < len(hosts) {
				_, hosts[int(proc)], _ = strings.Cut(remote, "@")
			}
		}
		return hosts
	}
	// counted is the shortest count among all the jobs' files.
	counted := func() int {
		least := -1
		for _, files := range hopFiles {
			for _, f := range files {
				if c := len(readCounts(t, filepath.Join(work, f))); least < 0 || c < least {
					least = c
				}
			}
		}
		return least
	}
	var hosts []string
	eventually(t, 90*time.Second, "every job to run and count", func() bool {
		hosts = where()
		return !slices.Contains(hosts, "") && counted() >= 3
	})
	for hop := 1; hop <= 5; hop++ {
		start, left := time.Now(), counted()
		for i := range hopKinds {
			if out, code := n.tool("submit", "vacate", fmt.Sprintf("1.%d", i)); code != 0 {
				t.Fatalf("vacate 1.%d: exit %d: %s", i, code, out)
			}
		}
		eventually(t, 90*time.Second, fmt.Sprintf("every job to count on the other host (hop %d)", hop), func() bool {
			now := where()
			for i, h := range now {
				if h == "" || h == hosts[i] {
					return false
				}
			}
			if counted() <= left+1 {
				return false
			}
			hosts = now
			return true
		})
		t.Logf("hop %d: every job counts on the other host after %s (%v)", hop, time.Since(start).Round(time.Millisecond), hosts)
	}
	writeFile(t, filepath.Join(work, "stop"), "", 0o644)
	for i := range hopKinds {
		if out, code := n.tool("submit", "wait", "--timeout", "60", fmt.Sprintf("1.%d", i)); code != 0 {
			t.Fatalf("wait 1.%d: exit %d: %s", i, code, out)
		}
	}
	for name, h := range n.hosts {
		if after := netState(t, h.ns); after != before[name] {
			t.Errorf("the network of %s changed with the migrations:\nbefore:\n%s\nafter:\n%s", name, before[name], after)
		}
	}

	for _, kind := range hopKinds {
		t.Run(kind, func(t *testing.T) {
			for _, f := range hopFiles[kind] {
				got := readCounts(t, filepath.Join(work, f))
				for i, c := range got {
					if c != i+1 {
						t.Fatalf("%s breaks at line %d: %v", f, i+1, got)
					}
				}
				if len(got) < 10 {
					t.Errorf("%s counted to %d only", f, len(got))
				}
			}
			if errOut, _ := os.ReadFile(filepath.Join(work, kind+".err")); len(errOut) != 0 {
				t.Errorf("%s.err: %s", kind, errOut)
			}
		})
	}
	// The counting script printed each number once, and read on in its
	// input where it was.
	out := lines(t, filepath.Join(work, "count.out"))
	for i, l := range out {
		if l != fmt.Sprintf("count %d", i+1) {
			t.Fatalf("count.out line %d is %q", i+1, l)
		}
	}
	reads := lines(t, filepath.Join(work, "reads.txt"))
	for i, l := range reads {
		if want := fmt.Sprintf("%d line%d line%d", i+1, i+1, i+1); l != want {
			t.Fatalf("reads.txt line %d: %q, want %q", i+1, l, want)
		}
	}
	if c := len(readCounts(t, filepath.Join(work, "count.txt"))); len(out) != c || len(reads) != c {
		t.Errorf("%d counts, %d lines of output, %d reads", c, len(out), len(reads))
	}
	log, _ := os.ReadFile(filepath.Join(work, "hop.log"))
	if got := strings.Count(string(log), "(1) Job was checkpointed."); got < 5*len(hopKinds) {
		t.Errorf("the event log records %d checkpoints, want %d:\n%s", got, 5*len(hopKinds), log)
	}
	if imgs, _ := filepath.Glob(filepath.Join(n.hosts["submit"].dir, "spool", "checkpoints", "*", "*.ckpt")); len(imgs) != 0 {
		t.Errorf("images outlived their jobs: %v", imgs)
	}
}

// lines returns the lines of a file.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestOwnerReturnsJobMigrates follows a job through the desktop policy
// to another machine: in a netns pool whose execute host "desk" has an
// owner at a (pseudo-)terminal and "exec2" none, a counting job starts
// on the desk once its keyboard is idle; the owner types and the job is
// suspended; the owner goes on typing and the suspended job is vacated
// with a checkpoint; it is restored on exec2 and completes, its count
// unbroken. The event log and the job's ad record the checkpoint.
func TestOwnerReturnsJobMigrates(t *testing.T) {
	kb := openTerminal(t)
	n := newNetnsPool(t, "submit", "desk", "exec2")
	roles := map[string]string{"submit": "matchmaker,agent", "desk": "startd", "exec2": "startd"}
	n.configure("submit", roles)
	appendConf(t, filepath.Join(n.hosts["desk"].dir, poolConfigName), fmt.Sprintf(desktopTestConf, kb.path))
	n.run(roles)

	work := filepath.Join(n.hosts["submit"].dir, "work")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "examples", "migration"), work).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v: %s", err, out)
	}
	// The job first runs on the desk; once it has a checkpoint, anywhere.
	writeFile(t, filepath.Join(work, "desk.sub"), `executable   = count.sh
arguments    = 160
output       = count.out
error        = count.err
log          = count.log
requirements = (TARGET.Machine == "desk") || (MY.NumCkpts =!= undefined)
queue
`, 0o644)
	if out, code := n.tool("submit", "submit", filepath.Join(work, "desk.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	job := func() map[string]any {
		out, code := n.tool("submit", "q", "-json", "1.0")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil || len(ads) != 1 {
			t.Fatalf("q -json 1.0: exit %d: %s", code, out)
		}
		return ads[0]
	}
	status := func() float64 { st, _ := job()["JobStatus"].(float64); return st }
	logPath := filepath.Join(work, "count.log")

	// The keyboard has been idle long enough: the job starts on the desk.
	eventually(t, 60*time.Second, "the job to run on the desk", func() bool {
		return job()["RemoteHost"] == "slot1@desk" && len(counts(t, work)) >= 8
	})

	// The owner comes back: the job is suspended and counts no more.
	kb.press(t)
	eventually(t, 12*time.Second, "the job to be suspended", func() bool { return status() == 7 })
	held := len(counts(t, work))
	time.Sleep(time.Second)
	if now := len(counts(t, work)); now != held {
		t.Errorf("the suspended job counted from %d to %d", held, now)
	}

	// The owner stays: the suspended job is vacated with a checkpoint,
	// and the other machine restores it.
	stop := kb.keepTyping(t)
	defer stop()
	eventually(t, 60*time.Second, "the job to run on exec2", func() bool {
		return job()["RemoteHost"] == "slot1@exec2" && len(counts(t, work)) > held
	})
	if out, code := n.tool("submit", "wait", "--timeout", "120", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	checkCounted(t, work, 160)

	log := readLog(t, logPath)
	order := []string{"001 (001.000.000)", "010 (001.000.000)", "003 (001.000.000)", "004 (001.000.000)", "001 (001.000.000)", "005 (001.000.000)"}
	rest := log
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("event log lacks %s in the order %v:\n%s", want, order, log)
		}
		rest = rest[i+len(want):]
	}
	for _, want := range []string{"Job was suspended.", "Job was checkpointed.", "(1) Job was checkpointed."} {
		if !strings.Contains(log, want) {
			t.Errorf("event log lacks %q:\n%s", want, log)
		}
	}
	hist, code := n.tool("submit", "history", "-json", "1.0")
	var ads []map[string]any
	if code != 0 || json.Unmarshal([]byte(hist), &ads) != nil || len(ads) != 1 {
		t.Fatalf("history -json 1.0: exit %d: %s", code, hist)
	}
	ad := ads[0]
	for _, attr := range []string{"NumCkpts", "LastCkptTime", "LastCkptSize", "LastCkptImageSize", "LastCkptFrozenTime", "LastCkptDumpTime", "LastCkptRestoreTime"} {
		if v, _ := ad[attr].(float64); v <= 0 {
			t.Errorf("job ad: %s = %v, want > 0", attr, ad[attr])
		}
	}
	if ad["LastRemoteHost"] != "slot1@exec2" {
		t.Errorf("LastRemoteHost = %v, want slot1@exec2", ad["LastRemoteHost"])
	}
	t.Logf("checkpoints %v, frozen %v s, dump %v s, restore %v s, image %v bytes (%v compressed)",
		ad["NumCkpts"], ad["LastCkptFrozenTime"], ad["LastCkptDumpTime"], ad["LastCkptRestoreTime"], ad["LastCkptImageSize"], ad["LastCkptSize"])
}

// checkCounted checks that the counting job in work counted from 1 to n
// in count.txt, and printed each number once, in order, in count.out:
// nothing lost or repeated across its checkpoints and restores.
func checkCounted(t *testing.T, work string, n int) {
	t.Helper()
	got := counts(t, work)
	for i, c := range got {
		if c != i+1 {
			t.Fatalf("count.txt breaks at line %d: %v", i+1, got)
		}
	}
	if len(got) != n {
		t.Fatalf("count.txt has %d numbers, want %d", len(got), n)
	}
	out, _ := os.ReadFile(filepath.Join(work, "count.out"))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, fmt.Sprintf("count %d ", i+1)) {
			t.Fatalf("count.out line %d is %q:\n%s", i+1, l, out)
		}
	}
	if len(lines) != n {
		t.Errorf("count.out has %d lines, want %d:\n%s", len(lines), n, out)
	}
}

// TestCheckpointPlatform: a job checkpointed on one machine goes on only
// where its image can be restored, a machine advertising the
// CheckpointPlatform of the one it was taken on, even when the job ranks
// another higher; there it is restored and counts on unbroken. exec3's
// administrator gave it another platform (CHECKPOINT_PLATFORM).
func TestCheckpointPlatform(t *testing.T) {
	n := newNetnsPool(t, "submit", "exec1", "exec2", "exec3")
	roles := map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd", "exec3": "startd"}
	mmOf, extra := map[string]string{}, map[string]string{}
	for name := range n.hosts {
		mmOf[name] = "submit"
	}
	extra["exec3"] = "CHECKPOINT_PLATFORM = LINUX X86_64 elsewhere"
	n.configurePools(mmOf, roles, extra)
	n.run(roles)

	platforms := map[string]string{}
	out, code := n.tool("submit", "status", "-af", "Machine", "CheckpointPlatform")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, out)
	}
	for line := range strings.Lines(out) {
		if host, platform, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			platforms[host] = platform
		}
	}
	here := checkpoint.Platform()
	if platforms["exec1"] != here || platforms["exec2"] != here || platforms["exec3"] != "LINUX X86_64 elsewhere" {
		t.Fatalf("machines' CheckpointPlatform %q, want exec1's and exec2's %q and exec3's as configured", platforms, here)
	}

	work := hopWork(t, n)
	// It starts on exec1; each later run must be on another machine, and
	// exec3 is the one it prefers.
	writeFile(t, filepath.Join(work, "count.sub"), `executable   = hop.sh
arguments    = count
input        = input.txt
output       = count.out
error        = count.err
log          = hop.log
requirements = ifThenElse(MY.LastRemoteHost =?= undefined, TARGET.Machine == "exec1", TARGET.Machine =!= splitslotname(MY.LastRemoteHost)[1])
rank         = TARGET.Machine == "exec3"
queue
`, 0o644)
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if out, code := n.tool("submit", "submit", filepath.Join(work, "count.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	host := func() string {
		out, _ := n.tool("submit", "q", "-af", "RemoteHost")
		_, h, _ := strings.Cut(strings.TrimSpace(out), "@")
		return h
	}
	counted := func() int { return len(readCounts(t, filepath.Join(work, "count.txt"))) }
	eventually(t, 60*time.Second, "the job to count on exec1", func() bool { return host() == "exec1" && counted() >= 3 })
	if out, code := n.tool("submit", "vacate", "1.0"); code != 0 {
		t.Fatalf("vacate: exit %d: %s", code, out)
	}
	left := counted()
	eventually(t, 60*time.Second, "the job to count on another machine", func() bool {
		h := host()
		return h != "" && h != "exec1" && counted() > left+1
	})
	if h := host(); h != "exec2" {
		t.Errorf("the job checkpointed on exec1 went on on %s, whose platform is %q", h, platforms[h])
	}
	out, _ = n.tool("submit", "q", "-af", "LastCheckpointPlatform", "NumRestores")
	if want := here + " 1"; strings.TrimSpace(out) != want {
		t.Errorf("LastCheckpointPlatform and NumRestores: %q, want %q", strings.TrimSpace(out), want)
	}
	if out, _ := n.tool("submit", "q", "-better-analyze", "1.0"); !strings.Contains(out, "machines restore it") || !strings.Contains(out, ": 2 of 3 machines restore it") {
		t.Errorf("-better-analyze does not say that exec1 and exec2 restore the job:\n%s", out)
	}
	writeFile(t, filepath.Join(work, "stop"), "", 0o644)
	if out, code := n.tool("submit", "wait", "--timeout", "60", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	got := readCounts(t, filepath.Join(work, "count.txt"))
	for i, c := range got {
		if c != i+1 {
			t.Fatalf("count.txt breaks at line %d: %v", i+1, got)
		}
	}
}

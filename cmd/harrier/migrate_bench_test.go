package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/joblog"
)

// memoryJob holds MiB mebibytes of random data ($1) and appends a count to
// count.txt every 0.1 s until a file named stop appears; it then checks
// that its memory is what it was and exits 1 if not.
const memoryJob = `import hashlib, os, sys, time
size = int(sys.argv[1]) << 20
mem = bytearray(size)
for off in range(0, size, 64 << 20):
    n = min(64 << 20, size - off)
    mem[off:off + n] = os.urandom(n)
digest = hashlib.sha256(mem).digest()
i = 0
while not os.path.exists("stop"):
    i += 1
    with open("count.txt", "a") as f:
        f.write("%d\n" % i)
    time.sleep(0.1)
if hashlib.sha256(mem).digest() != digest:
    print("corrupted")
    sys.exit(1)
`

// hopTimes is the timeline of one migration, each mark the time since the
// vacate was asked for; a mark not seen is zero.
type hopTimes struct {
	marks map[string]time.Duration
}

// timelineMarks are the marks of a hop, in the order they happen, and where
// each comes from: the test's polls of harrier q and of the job's output,
// the job's event log (whole seconds), or a message of a daemon's or
// starter's log (the first after the vacate).
var timelineMarks = []struct {
	name string
	msg  string // the log message; "" for the test's own observations
	with string // what the log line must also hold, if anything
	role string // which log: "old" (the starter the job leaves), "new", "startd-new", "agent" (with its shadows')
}{
	{"dumped", "checkpoint dumped", "", "old"},
	{"stored", "checkpoint stored", "", "agent"},
	{"sent", "checkpoint sent", "", "old"},
	{"log-evicted", "", "", ""},
	{"q-idle", "", "", ""},
	{"matched", "slot changed", "to=Matched/", "startd-new"},
	{"starter-new", "starter started", "", "startd-new"},
	{"fetched", "checkpoint fetched", "", "new"},
	{"restored", "job restored from its checkpoint", "", "new"},
	{"log-executing", "", "", ""},
	{"q-running", "", "", ""},
	{"counting", "", "", ""},
}

// BenchmarkMigrateMemoryJob moves a job holding incompressible memory
// (python3 with random data) between the two execute hosts of a netns
// pool, b.N times, and reports the median time from harrier vacate to
// each mark of the hop's timeline: the old starter's dump and upload, the
// job seen Idle and then Running on the other host by harrier q, the new
// starter's download and restore, and the job's next count. The job's
// memory is checked when it ends.
//
//	go test ./cmd/harrier -run XXX -bench MigrateMemoryJob -benchtime 3x -v
func BenchmarkMigrateMemoryJob(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("the job is a python3 program (scripts/setup installs python3)")
	}
	for _, mib := range []int{256, 1024} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) { benchmarkMigrate(b, mib) })
	}
}

func benchmarkMigrate(b *testing.B, mib int) {
	n := newNetnsPool(b, "submit", "exec1", "exec2")
	n.start("submit", map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd"})
	work := filepath.Join(n.hosts["submit"].dir, "work")
	writeFile(b, filepath.Join(work, "memory.py"), memoryJob, 0o644)
	writeFile(b, filepath.Join(work, "memory.sub"), fmt.Sprintf(`executable     = /usr/bin/python3
arguments      = memory.py %d
output         = memory.out
error          = memory.err
log            = memory.log
request_memory = %d
requirements   = (MY.LastRemoteHost =?= undefined) || (TARGET.Machine =!= splitslotname(MY.LastRemoteHost)[1])
queue
`, mib, mib+512), 0o644)
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if out, code := n.tool("submit", "submit", filepath.Join(work, "memory.sub")); code != 0 {
		b.Fatalf("submit: exit %d: %s", code, out)
	}
	countFile := filepath.Join(work, "count.txt")
	count := func() int {
		c, _ := os.ReadFile(countFile)
		return strings.Count(string(c), "\n")
	}
	// where returns the job's status and execute host as harrier q says.
	where := func() (int, string) {
		out, code := n.tool("submit", "q", "-json", "1.0")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil || len(ads) == 0 {
			b.Fatalf("q -json: exit %d: %s", code, out)
		}
		st, _ := ads[0]["JobStatus"].(float64)
		remote, _ := ads[0]["RemoteHost"].(string)
		_, host, _ := strings.Cut(remote, "@")
		return int(st), host
	}
	var host string
	eventually(b, 120*time.Second, "the job to fill its memory and count", func() bool {
		st, h := where()
		host = h
		return st == 2 && count() >= 5
	})

	var hops []hopTimes
	for b.Loop() {
		hop := hopTimes{marks: map[string]time.Duration{}}
		start := time.Now()
		if out, code := n.tool("submit", "vacate", "1.0"); code != 0 {
			b.Fatalf("vacate: exit %d: %s", code, out)
		}
		left := -1
		eventually(b, 120*time.Second, "the job to count on the other host", func() bool {
			st, h := where()
			now := time.Since(start)
			if st == 1 && left < 0 {
				hop.marks["q-idle"], left = now, count()
			}
			if st == 2 && h != "" && h != host && hop.marks["q-running"] == 0 {
				hop.marks["q-running"] = now
				if left < 0 {
					left = count() // Idle fell between two polls
				}
			}
			if hop.marks["q-running"] != 0 && count() > left {
				hop.marks["counting"] = time.Since(start)
				return true
			}
			return false
		})
		from, to := host, ""
		_, to = where()
		logMarks(b, n, from, to, start, &hop)
		hops = append(hops, hop)
		host = to
		b.Logf("hop %s → %s: %s", from, to, hop)
		for _, l := range loggedSince(start, slices.Concat(starterLogs(n, from), starterLogs(n, to), []string{filepath.Join(n.hosts["submit"].dir, "agent.log")}), "checkpoint") {
			b.Log(l)
		}
	}
	b.StopTimer()
	for _, m := range timelineMarks {
		var ds []time.Duration
		for _, h := range hops {
			if d := h.marks[m.name]; d > 0 {
				ds = append(ds, d)
			}
		}
		if len(ds) > 0 {
			slices.Sort(ds)
			b.ReportMetric(ds[len(ds)/2].Seconds(), m.name+"-s")
		}
	}
	b.Logf("load average %s", loadAverage())

	writeFile(b, filepath.Join(work, "stop"), "", 0o644)
	if out, code := n.tool("submit", "wait", "--timeout", "120", "1.0"); code != 0 {
		b.Fatalf("wait: exit %d: %s", code, out)
	}
	logPath := filepath.Join(work, "memory.log")
	eventually(b, 30*time.Second, "the job's end in its event log", func() bool {
		log, _ := os.ReadFile(logPath)
		return strings.Contains(string(log), "005 (001.000.000)")
	})
	got, _ := os.ReadFile(countFile)
	for i, f := range strings.Fields(string(got)) {
		if f != fmt.Sprint(i+1) {
			b.Fatalf("count.txt breaks at line %d (%q)", i+1, f)
		}
	}
	if out, _ := os.ReadFile(filepath.Join(work, "memory.out")); len(out) != 0 {
		b.Fatalf("the job says: %s", out)
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "(return value 0)") {
		b.Fatalf("the job did not end well:\n%s", log)
	}
}

// logMarks adds the marks found in the logs of the hop from host from to
// host to that began at start.
func logMarks(b *testing.B, n *netnsPool, from, to string, start time.Time, hop *hopTimes) {
	// The event log's times are whole seconds: a mark may be up to a
	// second early, or before the vacate (then it is left out).
	if f, err := os.Open(filepath.Join(n.hosts["submit"].dir, "work", "memory.log")); err == nil {
		events, _ := joblog.Read(f)
		f.Close()
		for _, e := range events {
			name := map[joblog.Type]string{joblog.Evicted: "log-evicted", joblog.Execute: "log-executing"}[e.Type]
			if d := e.Time.Sub(start); name != "" && d > 0 && hop.marks[name] == 0 {
				hop.marks[name] = d
			}
		}
	}
	logs := map[string][]string{
		"old":        starterLogs(n, from),
		"new":        starterLogs(n, to),
		"startd-new": {filepath.Join(n.hosts[to].dir, "startd.log")},
		"agent":      {filepath.Join(n.hosts["submit"].dir, "agent.log")},
	}
	for _, m := range timelineMarks {
		if m.msg == "" {
			continue
		}
		for _, path := range logs[m.role] {
			if t, ok := firstLogged(path, m.msg, m.with, start); ok && (hop.marks[m.name] == 0 || t < hop.marks[m.name]) {
				hop.marks[m.name] = t
			}
		}
	}
}

// starterLogs are the logs of a host's starters.
func starterLogs(n *netnsPool, host string) []string {
	l, _ := filepath.Glob(filepath.Join(n.hosts[host].dir, "execute", "*", "starter.*.log"))
	return l
}

// loggedSince returns the lines of the logs at paths logged after start
// whose message begins with prefix, in time order.
func loggedSince(start time.Time, paths []string, prefix string) []string {
	var out []string
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		for line := range strings.Lines(string(b)) {
			stamp, rest, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			t, err := time.Parse(time.RFC3339Nano, stamp)
			if err == nil && !t.Before(start) && (strings.Contains(rest, "msg="+prefix) || strings.Contains(rest, "msg=\""+prefix)) {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	slices.Sort(out) // by their time stamps, all in one zone
	return out
}

// firstLogged finds the first line of a log/slog text log with message msg
// (and the text with, if any) logged after start, and returns its time
// since start.
func firstLogged(path, msg, with string, start time.Time) (time.Duration, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	want := "msg=" + fmt.Sprintf("%q", msg)
	if !strings.ContainsAny(msg, " =\"") {
		want = "msg=" + msg
	}
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, want) || !strings.Contains(line, with) || !strings.HasPrefix(line, "time=") {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		t, err := time.Parse(time.RFC3339Nano, stamp)
		if err == nil && !t.Before(start) {
			return t.Sub(start), true
		}
	}
	return 0, false
}

func (h hopTimes) String() string {
	var b strings.Builder
	for _, m := range timelineMarks {
		if d, ok := h.marks[m.name]; ok {
			fmt.Fprintf(&b, " %s %.2fs", m.name, d.Seconds())
		}
	}
	return strings.TrimSpace(b.String())
}

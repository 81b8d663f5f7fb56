package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitScript runs until the file "finish" appears in its directory.
const waitScript = `#!/bin/sh
while [ ! -e finish ]; do sleep 0.2; done
echo finished on $(hostname)
`

// TestDrainMigrates drains an execute host of a netns pool running two
// jobs: a counting job, which the drain checkpoints and which continues
// on the other host, its count unbroken; and a job with want_checkpoint
// = false, which retires (MAXJOBRETIREMENTTIME) and finishes where it
// runs, never evicted. Meanwhile the pool's status shows the machine
// draining, why, and its running job Retiring; once empty its slots are
// Drained. Cancelled, the machine runs jobs again.
func TestDrainMigrates(t *testing.T) {
	n := newNetnsPool(t, "submit", "exec1", "exec2")
	roles := map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd"}
	n.configure("submit", roles)
	appendConf(t, filepath.Join(n.hosts["exec1"].dir, poolConfigName), "NUM_SLOTS = 2\nMAXJOBRETIREMENTTIME = 3600\n")
	appendConf(t, filepath.Join(n.hosts["submit"].dir, poolConfigName), "NEGOTIATOR_INTERVAL = 2\n")
	n.daemon("submit", "matchmaker")
	n.daemon("submit", "agent")
	n.master("exec1", "startd")
	n.master("exec2", "startd")
	n.waitForSlots("submit", "slot1@exec1", "slot2@exec1", "slot1@exec2")

	work := filepath.Join(n.hosts["submit"].dir, "work")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "examples", "migration"), work).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v: %s", err, out)
	}
	writeFile(t, filepath.Join(work, "wait.sh"), waitScript, 0o755)
	// Both jobs start on exec1; once checkpointed, the count may run
	// anywhere.
	writeFile(t, filepath.Join(work, "count.sub"), `executable   = count.sh
arguments    = 240
output       = count.out
error        = count.err
log          = jobs.log
requirements = (TARGET.Machine == "exec1") || (MY.NumCkpts =!= undefined)
queue
`, 0o644)
	writeFile(t, filepath.Join(work, "wait.sub"), `executable   = wait.sh
output       = wait.out
error        = wait.err
log          = jobs.log
want_checkpoint = false
requirements = TARGET.Machine == "exec1"
queue
`, 0o644)
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	for _, sub := range []string{"count.sub", "wait.sub"} {
		if out, code := n.tool("submit", "submit", filepath.Join(work, sub)); code != 0 {
			t.Fatalf("submit %s: exit %d: %s", sub, code, out)
		}
	}
	job := func(id string) map[string]any {
		out, code := n.tool("submit", "q", "-json", id)
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil || len(ads) != 1 {
			return map[string]any{}
		}
		return ads[0]
	}
	host := func(id string) string {
		ad := job(id)
		if st, _ := ad["JobStatus"].(float64); st != 2 {
			return ""
		}
		remote, _ := ad["RemoteHost"].(string)
		_, h, _ := strings.Cut(remote, "@")
		return h
	}
	eventually(t, 90*time.Second, "both jobs to run on exec1", func() bool {
		return host("1.0") == "exec1" && host("2.0") == "exec1" && len(counts(t, work)) >= 4
	})

	out, code := n.tool("exec1", "drain", "-reason", "new disks", "exec1")
	if code != 0 || !strings.Contains(out, "exec1: draining (new disks)") ||
		!strings.Contains(out, "continue elsewhere") || !strings.Contains(out, "retiring") {
		t.Fatalf("drain: exit %d: %s", code, out)
	}
	drained := len(counts(t, work))
	eventually(t, 90*time.Second, "the count to go on on exec2", func() bool {
		return host("1.0") == "exec2" && len(counts(t, work)) > drained+2
	})
	if h := host("2.0"); h != "exec1" {
		t.Errorf("the uncheckpointable job runs on %q during its retirement, want exec1", h)
	}
	status := func() string {
		out, _ := n.tool("submit", "status", "-af", "Name", "State", "Activity", "Draining", "DrainReason",
			"-constraint", `Machine == "exec1"`)
		return out
	}
	var st string
	eventually(t, 30*time.Second, "status to show exec1 draining, its job retiring", func() bool {
		st = status()
		return strings.Contains(st, "Claimed Retiring true new disks") && strings.Contains(st, "Drained Idle true new disks")
	})

	if out, code := n.tool("submit", "status", "-draining"); code != 0 ||
		!regexp.MustCompile(`(?m)^exec1 +2 +1 +\S+ +(Cr,Dr|Dr,Cr|Cr,Di|Di,Cr) +new disks$`).MatchString(out) || strings.Contains(out, "exec2") {
		t.Errorf("status -draining: exit %d:\n%s", code, out)
	}
	// The retiring job finishes in its time, where it ran.
	writeFile(t, filepath.Join(work, "finish"), "", 0o644)
	if out, code := n.tool("submit", "wait", "--timeout", "60", "2.0"); code != 0 {
		t.Fatalf("wait 2.0: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "wait.out")); !strings.HasPrefix(string(b), "finished") {
		t.Errorf("the retiring job said %q", b)
	}
	hist, code := n.tool("submit", "history", "-json", "2.0")
	var ads []map[string]any
	if code != 0 || json.Unmarshal([]byte(hist), &ads) != nil || len(ads) != 1 {
		t.Fatalf("history -json 2.0: exit %d: %s", code, hist)
	}
	if last, _ := ads[0]["LastRemoteHost"].(string); !strings.HasSuffix(last, "@exec1") || ads[0]["NumJobStarts"] != float64(1) {
		t.Errorf("the retiring job ran on %v, started %v times; want exec1, once", ads[0]["LastRemoteHost"], ads[0]["NumJobStarts"])
	}
	eventually(t, 30*time.Second, "exec1's slots to be Drained", func() bool {
		st = status()
		return strings.Count(st, "Drained Idle true new disks") == 2
	})
	if out, code := n.tool("submit", "wait", "--timeout", "120", "1.0"); code != 0 {
		t.Fatalf("wait 1.0: exit %d: %s", code, out)
	}
	checkCounted(t, work, 240)
	log := readLog(t, filepath.Join(work, "jobs.log"))
	if strings.Contains(log, "004 (002.000.000)") || strings.Count(log, "005 (002.000.000)") != 1 {
		t.Errorf("the retiring job was evicted, or did not complete once:\n%s", log)
	}
	if !strings.Contains(log, "004 (001.000.000)") || !strings.Contains(log, "(1) Job was checkpointed.") {
		t.Errorf("the counting job was not vacated with a checkpoint:\n%s", log)
	}

	if out, code := n.tool("exec1", "drain", "-cancel", "exec1"); code != 0 || !strings.Contains(out, "back in service") {
		t.Fatalf("drain -cancel: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "exec1 back in service", func() bool {
		st = status()
		return strings.Count(st, "Unclaimed Idle false") == 2
	})
	writeFile(t, filepath.Join(work, "again.sub"), "executable = /bin/true\nrequirements = TARGET.Machine == \"exec1\"\nqueue\n", 0o644)
	if out, code := n.tool("submit", "submit", filepath.Join(work, "again.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	if out, code := n.tool("submit", "wait", "--timeout", "60", "3.0"); code != 0 {
		t.Fatalf("a job on the machine back in service: exit %d: %s", code, out)
	}
}

// TestDefragLoop runs the defrag daemon against a personal pool of one
// machine of two static slots, whole when every slot is idle: with a job
// running on one slot the machine is not whole, so the loop drains it
// (gracefully: the job, which cannot be checkpointed, retires and
// finishes there), and once the job is gone the machine is whole and the
// loop cancels its drain.
func TestDefragLoop(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, `NUM_SLOTS = 2
NEGOTIATOR_INTERVAL = 2
MAXJOBRETIREMENTTIME = 3600
DEFRAG_INTERVAL = 1
DEFRAG_DRAINING_MACHINES_PER_HOUR = 3600
DEFRAG_MAX_CONCURRENT_DRAINING = 1
DEFRAG_REQUIREMENTS = true
DEFRAG_WHOLE_MACHINE_EXPR = Activity == "Idle" && (State == "Unclaimed" || State == "Drained")
DEFRAG_SCHEDULE = graceful`)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	writeFile(t, filepath.Join(dir, "wait.sh"), waitScript, 0o755)
	id := fmt.Sprint(p.submit(t, dir, "wait.sub", "executable = wait.sh\nwant_checkpoint = false\nlog = wait.log\nqueue\n")) + ".0"
	eventually(t, time.Minute, "the job to run", func() bool { return p.jobStatus(t, id) == 2 })

	logPath := filepath.Join(t.TempDir(), "defrag.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "daemon", "defrag", "--config", filepath.Join(p.dir, poolConfigName))
	cmd.Env = append(os.Environ(), asHarrier+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("---- defrag log\n%s", b)
		}
	})
	machine := func() string {
		out, _ := p.harrier(t, "status", "-af", "Name", "State", "Activity", "Draining", "DrainReason")
		return out
	}
	var st string
	eventually(t, time.Minute, "the loop to drain the machine, its job retiring", func() bool {
		st = machine()
		return strings.Contains(st, "Claimed Retiring true Defrag") && strings.Contains(st, "Drained Idle true Defrag")
	})
	writeFile(t, filepath.Join(dir, "finish"), "", 0o644)
	if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	eventually(t, time.Minute, "the loop to cancel the drain of the whole machine", func() bool {
		st = machine()
		return strings.Count(st, "Unclaimed Idle false") == 2
	})
	log := readLog(t, filepath.Join(dir, "wait.log"))
	if strings.Contains(log, "004 (") || strings.Count(log, "005 (") != 1 {
		t.Errorf("the retiring job was evicted, or did not complete once:\n%s", log)
	}
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "defrag: draining") || !strings.Contains(string(b), "drain cancelled") {
		t.Errorf("the defrag log lacks the drain and its cancellation:\n%s", b)
	}
}

// TestDefragMigrates runs the defrag daemon on the submit host of a netns
// pool whose two execute hosts of two slots each run one counting job
// each: neither is whole (every slot idle), so the daemon drains one,
// over TLS with the admin certificate, by migration; its job continues on
// the other host's free slot, its count unbroken; the drained host, now
// whole, is put back in service, and with DEFRAG_MAX_WHOLE_MACHINES = 1
// nothing more is drained.
func TestDefragMigrates(t *testing.T) {
	n := newNetnsPool(t, "submit", "exec1", "exec2")
	roles := map[string]string{"submit": "matchmaker,agent,admin", "exec1": "startd", "exec2": "startd"}
	n.configure("submit", roles)
	for _, h := range []string{"exec1", "exec2"} {
		appendConf(t, filepath.Join(n.hosts[h].dir, poolConfigName), "NUM_SLOTS = 2\n")
	}
	appendConf(t, filepath.Join(n.hosts["submit"].dir, poolConfigName), `NEGOTIATOR_INTERVAL = 2
DEFRAG_INTERVAL = 2
DEFRAG_DRAINING_MACHINES_PER_HOUR = 1800
DEFRAG_MAX_WHOLE_MACHINES = 1
DEFRAG_REQUIREMENTS = true
DEFRAG_WHOLE_MACHINE_EXPR = Activity == "Idle" && (State == "Unclaimed" || State == "Drained")
`)
	n.daemon("submit", "matchmaker")
	n.daemon("submit", "agent")
	n.master("exec1", "startd")
	n.master("exec2", "startd")
	n.waitForSlots("submit", "slot1@exec1", "slot2@exec1", "slot1@exec2", "slot2@exec2")

	work := filepath.Join(n.hosts["submit"].dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, h := range []string{"exec1", "exec2"} {
		dir := filepath.Join(work, fmt.Sprintf("job%d", i))
		if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "examples", "migration"), dir).CombinedOutput(); err != nil {
			t.Fatalf("copy example: %v: %s", err, out)
		}
		writeFile(t, filepath.Join(dir, "count.sub"), fmt.Sprintf(`executable   = count.sh
arguments    = 200
output       = count.out
log          = count.log
requirements = (TARGET.Machine == %q) || (MY.NumCkpts =!= undefined)
queue
`, h), 0o644)
	}
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	for i := range 2 {
		if out, code := n.tool("submit", "submit", filepath.Join(work, fmt.Sprintf("job%d", i), "count.sub")); code != 0 {
			t.Fatalf("submit: exit %d: %s", code, out)
		}
	}
	hosts := func() string {
		out, _ := n.tool("submit", "q", "-nobatch", "-af", "ClusterId", "RemoteHost")
		return out
	}
	eventually(t, 90*time.Second, "a job on each host", func() bool {
		h := hosts()
		return strings.Contains(h, "1 slot1@exec1") && strings.Contains(h, "2 slot1@exec2")
	})
	n.daemon("submit", "defrag")
	// exec1 is first by name: its job moves to exec2, which is then full.
	eventually(t, 2*time.Minute, "both jobs on exec2", func() bool {
		h := hosts()
		return strings.Contains(h, "1 slot2@exec2") && strings.Contains(h, "2 slot1@exec2")
	})
	status := func() string {
		out, _ := n.tool("submit", "status", "-af", "Machine", "State", "Draining")
		return out
	}
	var st string
	eventually(t, time.Minute, "exec1 back in service, whole", func() bool {
		st = status()
		return strings.Count(st, "exec1 Unclaimed false") == 2
	})
	for i := range 2 {
		if out, code := n.tool("submit", "wait", "--timeout", "120", fmt.Sprintf("%d.0", i+1)); code != 0 {
			t.Fatalf("wait %d.0: exit %d: %s", i+1, code, out)
		}
	}
	checkCounted(t, filepath.Join(work, "job0"), 200)
	if log := readLog(t, filepath.Join(work, "job0", "count.log")); !strings.Contains(log, "(1) Job was checkpointed.") {
		t.Errorf("the moved job was not checkpointed:\n%s", log)
	}
	if log := readLog(t, filepath.Join(work, "job1", "count.log")); strings.Contains(log, "004 (") {
		t.Errorf("the job on exec2 was evicted:\n%s", log)
	}
	b, _ := os.ReadFile(filepath.Join(n.hosts["submit"].dir, "defrag.log"))
	if strings.Count(string(b), "defrag: draining") != 1 || !strings.Contains(string(b), "machine=exec1") {
		t.Errorf("the defrag daemon should have drained exec1 once:\n%s", b)
	}
}

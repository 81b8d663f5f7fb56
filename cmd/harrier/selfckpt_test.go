package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// selfCountScript counts to 20, a step a second. progress.txt holds the
// last step done and is the job's checkpoint: every fifth step the job
// exits with its checkpoint code, 85, to have it saved. steps.txt notes
// every step run.
const selfCountScript = `#!/bin/sh
n=$(cat progress.txt 2>/dev/null || echo 0)
while [ "$n" -lt 20 ]; do
	n=$((n + 1))
	echo "$n" >> steps.txt
	echo "$n" > progress.txt
	if [ $((n % 5)) -eq 0 ] && [ "$n" -lt 20 ]; then
		exit 85
	fi
	sleep 1
done
`

// TestSelfCheckpointing runs a job that checkpoints itself
// (checkpoint_exit_code), as a real user: each time it exits with its
// checkpoint code its starter has its checkpoint file saved and starts it
// again at once, on the same machine and in the same run. Vacated
// between two checkpoints (without CRIU: want_checkpoint = false), it
// starts on the other execute machine from its last saved checkpoint,
// not from the progress it made after it, nor from scratch, and finishes
// its count. The saved file is its owner's: another user cannot read it.
func TestSelfCheckpointing(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 2, "")
	owner, other := newUser(t), newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "count")
	writeFile(t, filepath.Join(dir, "count.sh"), selfCountScript, 0o755)
	sub := filepath.Join(dir, "count.sub")
	writeFile(t, sub, `executable = count.sh
log = count.log
checkpoint_exit_code = 85
transfer_checkpoint_files = progress.txt
want_checkpoint = false
requirements = TARGET.Name =!= MY.LastRemoteHost
queue
`, 0o644)
	for _, f := range []string{dir, filepath.Join(dir, "count.sh"), sub} {
		if err := os.Chown(f, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	out, code := asUser(t, bin, owner.Username, append([]string{asHarrier + "=1"}, p.env...), "submit", sub)
	if code != 0 || !strings.Contains(out, "submitted to cluster 1") {
		t.Fatalf("submit as %s: exit %d: %s", owner.Username, code, out)
	}
	steps := func() []int {
		b, _ := os.ReadFile(filepath.Join(dir, "steps.txt"))
		var n []int
		for _, f := range strings.Fields(string(b)) {
			i, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("steps.txt holds %q", f)
			}
			n = append(n, i)
		}
		return n
	}
	// Vacated between two checkpoints, after at least one: at step 7 or
	// 12, before the checkpoint at 10 or 15.
	eventually(t, 90*time.Second, "the job to pass its first checkpoint", func() bool {
		s := steps()
		return len(s) >= 7 && s[len(s)-1]%5 == 2
	})
	q := p.jobs(t, "q", "1.0")[0]
	first, _ := q["RemoteHost"].(string)
	if n, _ := q["NumSelfCheckpoints"].(float64); n < 1 || q["NumJobStarts"] != 1.0 || q["NumJobCompletions"] != nil {
		t.Fatalf("before the vacate: NumSelfCheckpoints %v, NumJobStarts %v, NumJobCompletions %v; want the checkpoints "+
			"restarted by the starter, in one run, not counted as completions", q["NumSelfCheckpoints"], q["NumJobStarts"], q["NumJobCompletions"])
	}

	// The saved checkpoint is the owner's alone: it belongs to the owner,
	// and another user cannot read it.
	saved := filepath.Join(p.dir, "spool", "checkpoints", owner.Username, "1.0.files", "progress.txt")
	if got, err := os.ReadFile(saved); err != nil || !strings.HasSuffix(string(got), "0\n") && !strings.HasSuffix(string(got), "5\n") {
		t.Errorf("the saved checkpoint holds %q, %v; want a multiple of 5", got, err)
	}
	if fi, err := os.Stat(saved); err == nil {
		if u, _ := lookupIDs(t, owner.Username); fi.Sys().(*syscall.Stat_t).Uid != u {
			t.Errorf("the saved checkpoint belongs to uid %d, not its owner", fi.Sys().(*syscall.Stat_t).Uid)
		}
	}
	u, g := lookupIDs(t, other.Username)
	cmd := exec.Command("cat", saved)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u, Gid: g}}
	if got, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("another user read the saved checkpoint: %q", got)
	}

	p.must(t, "vacate", "1.0")
	if out, code := p.harrier(t, "wait", "--timeout", "120", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	s := steps()
	// One rewind, to just after a saved checkpoint: the steps after it
	// are run again, and none before it.
	var rewinds []int
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			rewinds = append(rewinds, i)
		}
	}
	if len(rewinds) != 1 || s[0] != 1 || s[len(s)-1] != 20 {
		t.Fatalf("steps %v: want 1 to 20 with one rewind, to the last checkpoint", s)
	}
	at := rewinds[0]
	if from := s[at] - 1; from%5 != 0 || from < 5 || s[at] > s[at-1] || s[at-1]-from >= 5 {
		t.Errorf("steps %v: vacated at %d, resumed after %d; want the last checkpoint before it", s, s[at-1], from)
	}
	h := p.jobs(t, "history", "1.0")[0]
	if h["JobStatus"] != 4.0 || h["ExitCode"] != 0.0 || h["NumJobStarts"] != 2.0 || h["NumJobCompletions"] != 1.0 ||
		h["LastRemoteHost"] == first {
		t.Errorf("history: JobStatus %v, ExitCode %v, NumJobStarts %v, NumJobCompletions %v, LastRemoteHost %v (first %s)",
			h["JobStatus"], h["ExitCode"], h["NumJobStarts"], h["NumJobCompletions"], h["LastRemoteHost"], first)
	}
	if n, _ := h["NumSelfCheckpoints"].(float64); n < 3 {
		t.Errorf("history: NumSelfCheckpoints %v, want one for each of 5, 10 and 15 (and more for those run again)", h["NumSelfCheckpoints"])
	}
	if _, err := os.Stat(filepath.Dir(saved)); !os.IsNotExist(err) {
		t.Errorf("the checkpoint files outlived the job: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "count.log"))
	if n := strings.Count(string(log), "Job was checkpointed."); n < 3 {
		t.Errorf("event log has %d checkpoints, want at least 3:\n%s", n, log)
	}
}

// TestSelfCheckpointingWithCRIU: a job that checkpoints itself is still
// checkpointed and migrated with CRIU, and goes on where it was. When its
// CRIU image, newer than its checkpoint files, cannot be restored, it
// starts from those files rather than from scratch.
func TestSelfCheckpointingWithCRIU(t *testing.T) {
	p := startPool(t, 2)
	submit := func() (string, func() []int) {
		dir := t.TempDir()
		_ = os.Chmod(dir, 0o755)
		writeFile(t, filepath.Join(dir, "count.sh"), selfCountScript, 0o755)
		c := p.submit(t, dir, "count.sub", "executable = count.sh\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = progress.txt\n"+
			"requirements = TARGET.Name =!= MY.LastRemoteHost\nqueue\n")
		return strconv.Itoa(c) + ".0", func() []int {
			b, _ := os.ReadFile(filepath.Join(dir, "steps.txt"))
			var n []int
			for _, f := range strings.Fields(string(b)) {
				i, _ := strconv.Atoi(f)
				n = append(n, i)
			}
			return n
		}
	}
	between := func(steps func() []int) func() bool {
		return func() bool {
			s := steps()
			return len(s) >= 7 && s[len(s)-1]%5 == 2
		}
	}

	id, steps := submit()
	eventually(t, 90*time.Second, "the job to pass its first checkpoint", between(steps))
	p.must(t, "vacate", id)
	if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	s := steps()
	for i := range s {
		if s[i] != i+1 || len(s) != 20 {
			t.Fatalf("steps %v: restored by CRIU, the job should have counted on, 1 to 20, none again", s)
		}
	}
	h := p.jobs(t, "history", id)[0]
	if n, _ := h["NumRestores"].(float64); n < 1 || h["NumJobStarts"] != 2.0 {
		t.Errorf("history: NumRestores %v, NumJobStarts %v; want a CRIU restore in a second run", h["NumRestores"], h["NumJobStarts"])
	}

	id, steps = submit()
	eventually(t, 90*time.Second, "the job to pass its first checkpoint", between(steps))
	p.must(t, "checkpoint", id)
	eventually(t, 30*time.Second, "a CRIU checkpoint", func() bool {
		n, _ := p.jobs(t, "q", id)[0]["NumCkpts"].(float64)
		return n >= 1
	})
	holdAndCorrupt(t, p, id)
	before := steps()
	last := before[len(before)-1]
	p.must(t, "release", id)
	if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	s = steps()
	if resumed := s[len(before)]; resumed != last/5*5+1 || last%5 == 0 {
		t.Errorf("steps %v: held at %d, the job should have started again from its checkpoint files, at %d", s, last, last/5*5+1)
	}
	h = p.jobs(t, "history", id)[0]
	if r, _ := h["LastRestoreFailure"].(string); r == "" || s[len(s)-1] != 20 {
		t.Errorf("history: LastRestoreFailure %q, last step %d", r, s[len(s)-1])
	}
}

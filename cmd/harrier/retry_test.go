package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exitsScript exits, on its nth run, with the nth line of codes.txt,
// counting its runs in runs.txt: its state is in its submit directory.
const exitsScript = `#!/bin/sh
n=$(cat runs.txt 2>/dev/null || echo 0)
n=$((n + 1))
echo $n > runs.txt
exit $(sed -n "${n}p" codes.txt)
`

// TestRetryUntil runs jobs under retry_until as condor_submit makes it
// into OnExitRemove: an exit code ends the retries (a job that exits 1
// twice, then 0, runs three times and leaves the queue), and so does an
// expression (a job that exits 3, then 7, stops at 7 with a retry left).
func TestRetryUntil(t *testing.T) {
	p := startPool(t, 1)
	job := func(codes, policy string) (dir, id string) {
		dir = t.TempDir()
		_ = os.Chmod(dir, 0o755)
		writeFile(t, filepath.Join(dir, "exits.sh"), exitsScript, 0o755)
		writeFile(t, filepath.Join(dir, "codes.txt"), codes, 0o644)
		c := p.submit(t, dir, "exits.sub", "executable = exits.sh\nlog = exits.log\n"+policy+"\nqueue\n")
		return dir, fmt.Sprintf("%d.0", c)
	}
	codeDir, codeID := job("1\n1\n0\n", "retry_until = 0")
	exprDir, exprID := job("3\n7\n1\n", "retry_until = ExitCode == 7")

	// As condor_submit: JobMaxRetries defaults to 2, and the policy names
	// the exit codes that end the retries.
	dry := p.must(t, "submit", "-dry-run", "-", filepath.Join(exprDir, "exits.sub"))
	for _, want := range []string{"JobMaxRetries = 2\n", "OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode is 0 || (ExitCode == 7)\n"} {
		if !strings.Contains(dry, want) {
			t.Errorf("-dry-run lacks %q:\n%s", want, dry)
		}
	}

	for _, tc := range []struct {
		dir, id        string
		runs, exitCode float64
	}{
		{codeDir, codeID, 3, 0},
		{exprDir, exprID, 2, 7},
	} {
		if out, code := p.harrier(t, "wait", "--timeout", "120", tc.id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", tc.id, code, out)
		}
		hist := p.jobs(t, "history", tc.id)
		if len(hist) != 1 {
			t.Fatalf("history of %s: %v", tc.id, hist)
		}
		h := hist[0]
		if h["JobStatus"] != 4.0 || h["NumJobStarts"] != tc.runs || h["NumJobCompletions"] != tc.runs || h["ExitCode"] != tc.exitCode {
			t.Errorf("job %s: JobStatus %v, NumJobStarts %v, NumJobCompletions %v, ExitCode %v; want 4, %v runs, exit %v",
				tc.id, h["JobStatus"], h["NumJobStarts"], h["NumJobCompletions"], h["ExitCode"], tc.runs, tc.exitCode)
		}
		if b, _ := os.ReadFile(filepath.Join(tc.dir, "runs.txt")); strings.TrimSpace(string(b)) != fmt.Sprint(tc.runs) {
			t.Errorf("job %s ran %q times, want %v", tc.id, b, tc.runs)
		}
		log, _ := os.ReadFile(filepath.Join(tc.dir, "exits.log"))
		if n := strings.Count(string(log), "Job terminated."); n != int(tc.runs) {
			t.Errorf("job %s: %d terminated events, want %v:\n%s", tc.id, n, tc.runs, log)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// harrierStdin is harrier with stdin as the command's standard input.
func harrierStdin(t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(harrierBin(t), args...)
	cmd.Env = append(append(os.Environ(), asHarrier+"=1"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harrier %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}

// parseAds reads ads in old syntax separated by blank lines.
func parseAds(t *testing.T, text string) []*classad.ClassAd {
	t.Helper()
	var ads []*classad.ClassAd
	for _, block := range strings.Split(strings.TrimSpace(text), "\n\n") {
		ad, err := classad.ParseOld(block)
		if err != nil {
			t.Fatalf("ad %q: %v", block, err)
		}
		ads = append(ads, ad)
	}
	return ads
}

// TestSubmitCommandLine: condor_submit's command line on a real pool.
// -dry-run shows the ads and queues nothing; name=value arguments and
// -append lines change what is queued; -batch-name names the batch over
// the file's; a description read from standard input runs like a file.
func TestSubmitCommandLine(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	sub := filepath.Join(dir, "echo.sub")
	writeFile(t, sub, "executable = /bin/echo\narguments = $(word)\noutput = out.$(Process)\nlog = echo.log\nbatch_name = fromfile\nqueue $(n:1)\n", 0o644)

	out := p.must(t, "submit", "-dry-run", "-", "word=hello", "n=2", sub)
	if !strings.HasSuffix(out, "2 job(s) dry-run to cluster 1.\n") {
		t.Fatalf("dry run said:\n%s", out)
	}
	ads := parseAds(t, strings.TrimSuffix(out, "2 job(s) dry-run to cluster 1.\n"))
	if len(ads) != 2 {
		t.Fatalf("dry run printed %d ads, want 2:\n%s", len(ads), out)
	}
	for i, ad := range ads {
		args, _ := ad.EvalString("Arguments")
		proc, _ := ad.EvalInt("ProcId")
		total, _ := ad.EvalInt("TotalSubmitProcs")
		if args != "hello" || proc != int64(i) || total != 2 {
			t.Errorf("dry-run ad %d: Arguments %q ProcId %d TotalSubmitProcs %d", i, args, proc, total)
		}
	}
	dry := filepath.Join(dir, "dry.ads")
	if out := p.must(t, "submit", "-dry-run", dry, "n=1", sub); out != "1 job(s) dry-run to cluster 1.\n" {
		t.Errorf("dry run to a file said %q", out)
	}
	if ads := parseAds(t, mustRead(t, dry)); len(ads) != 1 {
		t.Errorf("dry-run file holds %d ads, want 1", len(ads))
	}
	if q := p.jobs(t, "q"); len(q) != 0 {
		t.Fatalf("a dry run queued jobs: %v", q)
	}

	// HTCondor's options that Harrier lacks fail, saying why.
	for _, args := range [][]string{{"-unused", sub}, {"-interactive", sub}, {"-stm", "spool_and_forward", sub}} {
		if out, code := p.harrier(t, append([]string{"submit"}, args...)...); code != 2 || !strings.Contains(out, "not yet") && !strings.Contains(out, "refused") {
			t.Errorf("submit %v: exit %d: %s", args, code, out)
		}
	}
	c := p.submit(t, dir, "echo.sub", mustRead(t, sub)) // no n: one job
	stdinSub := fmt.Sprintf("executable = /bin/echo\narguments = from-file\noutput = %s/stdin.out\nlog = %s/echo.log\nqueue 2\n", dir, dir)
	// "-" implies -verbose, as in condor_submit: the ads, then the count.
	out, code := harrierStdin(t, p.env, stdinSub, "submit", "-batch-name", "nightly", "-append", "arguments = appended $(Process)", "-")
	var n, c2 int
	i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
	if _, err := fmt.Sscanf(out[i+1:], "%d job(s) submitted to cluster %d.", &n, &c2); code != 0 || err != nil || n != 2 ||
		len(parseAds(t, out[:i])) != 2 {
		t.Fatalf("submit from stdin: exit %d: %s", code, out)
	}
	if out, code := harrierStdin(t, p.env, "executable = /bin/true\nqueue\n", "submit"); code != 0 || !strings.Contains(out, "1 job(s) submitted") {
		t.Errorf("submit with no file reads stdin: exit %d: %s", code, out)
	}
	// -queue stands for the queue statement the file lacks; -terse prints
	// the ids; -maxjobs refuses a description that makes too many.
	noQueue := filepath.Join(dir, "noqueue.sub")
	writeFile(t, noQueue, "executable = /bin/true\n", 0o644)
	out = p.must(t, "submit", "-terse", noQueue, "-queue", "3")
	var c3, last int
	if _, err := fmt.Sscanf(out, "%d.0 - %d.2\n", &c3, &last); err != nil || c3 != last {
		t.Errorf("submit -terse -queue 3: %q", out)
	}
	if out, code := p.harrier(t, "submit", sub, "-queue", "2"); code == 0 || !strings.Contains(out, "has its own") {
		t.Errorf("submit -queue with a file that queues: exit %d: %s", code, out)
	}
	if out, code := p.harrier(t, "submit", "-maxjobs", "2", noQueue, "-queue", "3"); code == 0 || !strings.Contains(out, "more than -maxjobs 2") {
		t.Errorf("submit -maxjobs 2 of 3 jobs: exit %d: %s", code, out)
	}
	for _, job := range p.jobs(t, "q", fmt.Sprint(c2)) {
		if job["JobBatchName"] != "nightly" || !strings.HasPrefix(job["Arguments"].(string), "appended ") {
			t.Errorf("job from stdin: JobBatchName %v Arguments %v", job["JobBatchName"], job["Arguments"])
		}
	}
	if b := p.jobs(t, "q", fmt.Sprint(c))[0]["JobBatchName"]; b != "fromfile" {
		t.Errorf("JobBatchName %v, want the file's", b)
	}
	p.must(t, "wait", "--timeout", "60", fmt.Sprintf("%d.1", c2))
	if got := mustRead(t, filepath.Join(dir, "stdin.out")); got != "appended 1\n" {
		t.Errorf("the job from stdin wrote %q, want the appended arguments", got)
	}
	eventually(t, 60*time.Second, "all jobs to finish", func() bool { return len(p.jobs(t, "q")) == 0 })
}

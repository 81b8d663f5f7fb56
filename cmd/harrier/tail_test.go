package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTailFollowsOutput: harrier tail on a real pool shows the end of a
// running job's output and error, and with -follow what the job writes
// next, until the job stops running.
func TestTailFollowsOutput(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	flag := filepath.Join(dir, "go")
	c := p.submit(t, dir, "talk.sub", fmt.Sprintf(`executable = /bin/sh
arguments = "-c 'echo first; echo oops >&2; while [ ! -e %s ]; do sleep 0.1; done; echo second; echo third'"
output = talk.out
error = talk.err
queue
`, flag))
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "the job to write its first line", func() bool {
		out, code := p.harrier(t, "tail", id)
		return code == 0 && out == "first\n"
	})
	if out := p.must(t, "tail", "-maxbytes", "3", id); out != "st\n" {
		t.Errorf("tail -maxbytes 3: %q", out)
	}
	if out := p.must(t, "tail", "-stderr", "-no-stdout", id); out != "oops\n" {
		t.Errorf("tail -stderr -no-stdout: %q", out)
	}
	if out := p.must(t, "tail", "-stderr", id); !strings.Contains(out, "talk.out <==\nfirst\n") || !strings.Contains(out, "talk.err <==\noops\n") {
		t.Errorf("tail -stderr:\n%s", out)
	}

	follow := exec.Command(harrierBin(t), "tail", "-follow", id)
	follow.Env = append(append(os.Environ(), asHarrier+"=1"), p.env...)
	pipe, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	// Let the job go on only once tail has shown what it had written.
	r := bufio.NewReader(pipe)
	first, err := r.ReadString('\n')
	if err != nil || first != "first\n" {
		t.Fatalf("tail -follow began with %q: %v", first, err)
	}
	writeFile(t, flag, "", 0o644)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Wait(); err != nil {
		t.Fatalf("tail -follow: %v", err)
	}
	if string(rest) != "second\nthird\n" {
		t.Errorf("tail -follow went on with %q", rest)
	}
	if out, code := p.harrier(t, "tail", id); code != 1 || !strings.Contains(out, "not") {
		t.Errorf("tail of a finished job: exit %d: %s", code, out)
	}
}

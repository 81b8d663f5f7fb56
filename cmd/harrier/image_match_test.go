package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestContainerImageAnalyze: in a pool whose machines run no
// containers, a user's job in a container image stays idle, and
// q -better-analyze says why.
func TestContainerImageAnalyze(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "SANDBOX = process")
	u := newUser(t)
	dir := filepath.Join(u.HomeDir, "job")
	writeFile(t, filepath.Join(dir, "look.sh"), "#!/bin/sh\ntrue\n", 0o755)
	uid, gid := lookupIDs(t, u.Username)
	chownAll(t, u.HomeDir, uid, gid)
	c := p.submitAs(t, u.Username, dir, "look.sub", `universe = container
container_image = docker://registry.example/lab/tool:2
executable = look.sh
queue
`)
	id := fmt.Sprintf("%d.0", c)
	out, code := harrierAs(t, p.env, u.Username, "q", "-better-analyze", id)
	if code != 0 {
		t.Fatalf("q -better-analyze: exit %d: %s", code, out)
	}
	for _, want := range []string{
		"The job runs in container image docker://registry.example/lab/tool:2: 0 of 1 machines run such jobs (HasContainer), 0 hold the image already",
		"No machine runs jobs in containers: none advertises HasContainer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("q -better-analyze lacks %q:\n%s", want, out)
		}
	}
}

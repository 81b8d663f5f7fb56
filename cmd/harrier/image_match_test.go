package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/imagecache/imagetest"
	"harrier.dev/harrier/sandbox"
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

// TestContainerPrefersCachedImage: of two machines alike for a job, the
// one that holds the job's image gets it. The image, in a registry over
// HTTPS on loopback, is first pulled by a job that must run on the
// machine the negotiator would otherwise take second.
func TestContainerPrefersCachedImage(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	reg := newTestRegistry(t, "", "")
	reg.push("lab/tool:1", imagetest.Image(t, map[string]string{"etc/harrier-test-image": "tool\n"}))
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 2, "SANDBOX = container\nIMAGE_REGISTRY_CA = "+reg.caFile)
	var hosts []string
	eventually(t, 30*time.Second, "both machines to be advertised", func() bool {
		hosts = hosts[:0]
		for _, ad := range p.jobs(t, "status") {
			hosts = append(hosts, ad["Machine"].(string))
		}
		return len(hosts) == 2
	})
	slices.Sort(hosts)
	second := hosts[1]
	u := newUser(t)
	dir := filepath.Join(u.HomeDir, "job")
	writeFile(t, filepath.Join(dir, "look.sh"), "#!/bin/sh\ncat /etc/harrier-test-image\n", 0o755)
	uid, gid := lookupIDs(t, u.Username)
	chownAll(t, u.HomeDir, uid, gid)
	run := func(name, requirements string) map[string]any {
		t.Helper()
		c := p.submitAs(t, u.Username, dir, name+".sub", fmt.Sprintf(`universe = container
container_image = docker://%s/lab/tool:1
executable = look.sh
output = %s.out
%s
queue
`, reg.addr, name, requirements))
		id := fmt.Sprintf("%d.0", c)
		if out, code := harrierAs(t, p.env, u.Username, "wait", "--timeout", "90", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
		return p.historyAd(t, id)
	}
	run("warm", fmt.Sprintf("requirements = TARGET.Machine == %q", second))
	eventually(t, 30*time.Second, second+" to advertise the image", func() bool {
		for _, ad := range p.jobs(t, "status") {
			names, _ := ad["CachedImages"].([]any)
			if ad["Machine"] == second && slices.Contains(names, any(reg.addr+"/lab/tool:1")) {
				return true
			}
		}
		return false
	})
	if h := run("pick", ""); h["LastRemoteHost"] != "slot1@"+second {
		t.Errorf("the job ran on %v, not on %s, which holds its image", h["LastRemoteHost"], second)
	}
	if got := mustRead(t, filepath.Join(dir, "pick.out")); got != "tool\n" {
		t.Errorf("pick.out %q", got)
	}
}

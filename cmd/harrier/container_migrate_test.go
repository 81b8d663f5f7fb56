package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/imagecache/imagetest"
	"harrier.dev/harrier/sandbox"
)

// containerCountScript counts to $1, four numbers a second, into
// count.txt in the job's directory and into its image's root, through
// descriptors held open, and prints each; at the end it says how many
// numbers its root holds, and what image it is in.
const containerCountScript = `#!/bin/sh
exec 3>>count.txt 4>>/scratchpad/count
i=0
while [ "$i" -lt "$1" ]; do
	i=$((i + 1))
	echo "$i" >&3
	echo "$i" >&4
	echo "count $i of $1"
	sleep 0.25
done
n=0
while read x; do n=$((n + 1)); done < /scratchpad/count
echo "root $n $(cat /etc/harrier-test-image)" > root.txt
`

// TestContainerMigration migrates an ordinary user's counting job in
// its own container image between the two execute hosts of a netns
// pool. The image is in a registry served over HTTPS on the submit host
// (go-containerregistry's, with a CA of its own that the execute hosts
// are given as IMAGE_REGISTRY_CA); each execute host pulls it into its
// own cache. The job writes into its image's root through a descriptor
// it keeps open: that root's writes travel with the checkpoint, so the
// count runs on unbroken in the root as in the job's directory.
func TestContainerMigration(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	n := newNetnsPool(t, "submit", "exec1", "exec2")
	submit := n.hosts["submit"]
	reg := newTestRegistry(t, "", "", submit.ip)
	reg.push("harrier/count:1", imagetest.Image(t, map[string]string{"etc/harrier-test-image": "count-image\n", "scratchpad/": ""}))
	reg.serveIn(submit.ns, submit.ip+":5000")
	n.extra = "SANDBOX = container\nIMAGE_REGISTRY_CA = " + reg.caFile
	n.start("submit", map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd"})

	alice := newUser(t)
	uid, gid := lookupIDs(t, alice.Username)
	work := filepath.Join(alice.HomeDir, "hop")
	writeFile(t, filepath.Join(work, "count.sh"), containerCountScript, 0o755)
	// Each time the job runs, it must run on the other host.
	writeFile(t, filepath.Join(work, "count.sub"), fmt.Sprintf(`universe        = container
container_image = docker://%s:5000/harrier/count:1
executable      = count.sh
arguments       = 60
output          = count.out
error           = count.err
log             = count.log
requirements    = (MY.LastRemoteHost =?= undefined) || (TARGET.Machine =!= splitslotname(MY.LastRemoteHost)[1])
queue
`, submit.ip), 0o644)
	chownAll(t, work, uid, gid)
	if out, code := n.as(alice, "submit", filepath.Join(work, "count.sub")); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	host := func() string {
		out, code := n.tool("submit", "q", "-allusers", "-af", "RemoteHost", "1.0")
		if code != 0 {
			t.Fatalf("q: exit %d: %s", code, out)
		}
		return strings.TrimSpace(out)
	}
	var from string
	eventually(t, 90*time.Second, "the job to count in its image", func() bool {
		from = host()
		return strings.HasPrefix(from, "slot1@") && len(counts(t, work)) >= 8
	})
	if out, code := n.as(alice, "vacate", "1.0"); code != 0 {
		t.Fatalf("vacate as the job's owner: exit %d: %s", code, out)
	}
	eventually(t, 90*time.Second, "the job to count on the other host", func() bool {
		h := host()
		return strings.HasPrefix(h, "slot1@") && h != from && len(counts(t, work)) >= 20
	})
	if out, code := n.tool("submit", "wait", "--timeout", "120", "1.0"); code != 0 {
		t.Fatalf("wait: exit %d: %s\nerr: %s", code, out, mustRead(t, filepath.Join(work, "count.err")))
	}
	checkCounted(t, work, 60)
	if got := mustRead(t, filepath.Join(work, "root.txt")); got != "root 60 count-image\n" {
		t.Errorf("root.txt %q: the job's root did not keep its count across the migration", got)
	}
	hist, code := n.tool("submit", "history", "-json", "1.0")
	var ads []map[string]any
	if code != 0 || json.Unmarshal([]byte(hist), &ads) != nil || len(ads) != 1 {
		t.Fatalf("history -json 1.0: exit %d: %s", code, hist)
	}
	if ads[0]["NumRestores"] != 1.0 || ads[0]["NumRestoreFailures"] != nil {
		t.Errorf("NumRestores %v, NumRestoreFailures %v (%v), want one restore and no failure",
			ads[0]["NumRestores"], ads[0]["NumRestoreFailures"], ads[0]["LastRestoreFailure"])
	}
	// Each execute host pulled the image, both its layers, from the
	// registry, by the digest the other's checkpoint named.
	re := regexp.MustCompile(`container image ready.* digest=(sha256:[0-9a-f]+) .*unpacked=(\d+)`)
	digests := map[string]bool{}
	for _, h := range []string{"exec1", "exec2"} {
		logs, _ := filepath.Glob(filepath.Join(n.hosts[h].dir, "execute", "*", "starter.*.log"))
		var pulled []string
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				digests[m[1]] = true
				pulled = append(pulled, m[2])
			}
		}
		if len(pulled) != 1 || pulled[0] != "2" {
			t.Errorf("%s readied the image %d times, unpacking %v layers; want once, 2 layers", h, len(pulled), pulled)
		}
	}
	if len(digests) != 1 {
		t.Errorf("the hosts ran different images: %v", digests)
	}
}

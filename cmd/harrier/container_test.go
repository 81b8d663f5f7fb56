package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/imagecache/imagetest"
	"harrier.dev/harrier/sandbox"
)

// TestContainerUniverse: users' jobs with universe = container run in
// the image named by container_image, a docker-save tarball in the
// submit directory built here from busybox: they see the image's files
// (a marker), not the machine's, and write their output to the submit
// directory through iofs as usual. The machine pulls the image once for
// all the jobs of both users; one user's writes to the image's root are
// invisible to the other's job, and to the other user on the machine. A
// vacated job in its image is checkpointed with its root's writes, and
// restored in the image still cached.
func TestContainerUniverse(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	bin := publicBinary(t)
	p := &hostile{testPool: startPoolFrom(t, bin, 1, "SANDBOX = container\nNUM_SLOTS = 2"), bin: bin}
	if m := p.jobs(t, "status"); len(m) == 0 || m[0]["HasContainer"] != true || m[0]["HasDocker"] != true {
		t.Errorf("machine ad: HasContainer = %v, HasDocker = %v", m[0]["HasContainer"], m[0]["HasDocker"])
	}
	img := imagetest.Image(t, map[string]string{"etc/harrier-test-image": "marker-7f3a\n", "scratchpad/": ""})
	alice, bob := newUser(t), newUser(t)
	dirOf := func(u string) string {
		t.Helper()
		home := map[string]string{alice.Username: alice.HomeDir, bob.Username: bob.HomeDir}[u]
		dir := filepath.Join(home, "job")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		imagetest.WriteTarball(t, img, filepath.Join(dir, "img.tar"))
		uid, gid := lookupIDs(t, u)
		for _, f := range []string{dir, filepath.Join(dir, "img.tar")} {
			if err := os.Chown(f, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	submit := func(u, dir, desc string) int {
		t.Helper()
		path := filepath.Join(dir, "job.sub")
		writeFile(t, path, desc, 0o644)
		out, code := p.tool(t, u, "submit", path)
		return submitted(t, out, code)
	}

	// Alice's first job writes into its image's root and waits; her
	// second only looks around.
	aDir := dirOf(alice.Username)
	writeFile(t, filepath.Join(aDir, "probe.sh"), `#!/bin/sh
cat /etc/harrier-test-image
uname -s
ls /
test -e /etc/os-release && echo "host /etc"
echo "alice $1" > /scratchpad/alice-$1
if [ "$1" = 0 ]; then while [ ! -e go ]; do sleep 0.1; done; fi
cat /scratchpad/alice-$1
echo done
`, 0o755)
	a := submit(alice.Username, aDir, `universe = container
container_image = ./img.tar
executable = probe.sh
arguments = $(Process)
output = out.$(Process)
error = err.$(Process)
log = job.log
queue 2
`)
	eventually(t, 90*time.Second, "alice's second job to finish", func() bool {
		b, _ := os.ReadFile(filepath.Join(aDir, "out.1"))
		return strings.Contains(string(b), "done")
	})
	out1 := mustRead(t, filepath.Join(aDir, "out.1"))
	for _, want := range []string{"marker-7f3a", "Linux", "bin", "scratchpad"} {
		if !strings.Contains(out1, want) {
			t.Errorf("out.1 lacks %q:\n%s\nerr.1:\n%s", want, out1, mustRead(t, filepath.Join(aDir, "err.1")))
		}
	}
	if strings.Contains(out1, "host /etc") {
		t.Errorf("the job sees the machine's /etc:\n%s", out1)
	}

	// Alice's running job's write is in its upper directory, which bob
	// cannot read on the machine.
	var upper string
	defer func() {
		if upper == "" {
			o, _ := os.ReadFile(filepath.Join(aDir, "out.0"))
			e, _ := os.ReadFile(filepath.Join(aDir, "err.0"))
			t.Logf("out.0:\n%s\nerr.0:\n%s", o, e)
		}
	}()
	eventually(t, 60*time.Second, "alice's first job to write into its root", func() bool {
		m, _ := filepath.Glob(filepath.Join(p.testPool.dir, "execute", "*", "scratch.*", ".harrier_root", "upper", "scratchpad", "alice-0"))
		if len(m) > 0 {
			upper = m[0]
		}
		return upper != ""
	})
	uid, gid := lookupIDs(t, bob.Username)
	cat := exec.Command("cat", upper)
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	if b, err := cat.CombinedOutput(); err == nil {
		t.Errorf("bob reads alice's job's root on the machine: %s", b)
	}

	// Bob's job, in the same image, sees its own root only.
	bDir := dirOf(bob.Username)
	writeFile(t, filepath.Join(bDir, "look.sh"), "#!/bin/sh\ncat /etc/harrier-test-image\nls -a /scratchpad\ncat /scratchpad/alice-0\necho done\n", 0o755)
	b := submit(bob.Username, bDir, "universe = container\ncontainer_image = img.tar\nexecutable = look.sh\noutput = out\nerror = err\nqueue\n")
	if out, code := p.tool(t, bob.Username, "wait", "--timeout", "90", fmt.Sprintf("%d.0", b)); code != 0 {
		t.Fatalf("wait for bob's job: exit %d: %s", code, out)
	}
	bOut := mustRead(t, filepath.Join(bDir, "out"))
	if !strings.Contains(bOut, "marker-7f3a") || !strings.Contains(bOut, "done") || strings.Contains(bOut, "alice") {
		t.Errorf("bob's job:\n%s\nerr:\n%s", bOut, mustRead(t, filepath.Join(bDir, "err")))
	}

	// A job in its own image is checkpointed and restored, in the image
	// still cached, with what it wrote to its root.
	p.must(t, "vacate", fmt.Sprintf("%d.0", a))
	eventually(t, 60*time.Second, "the checkpoint in alice's event log", func() bool {
		return strings.Contains(readLog(t, filepath.Join(aDir, "job.log")), "Job was checkpointed.")
	})
	writeFile(t, filepath.Join(aDir, "go"), "", 0o644)
	if out, code := p.tool(t, alice.Username, "wait", "--timeout", "90", fmt.Sprintf("%d.0", a)); code != 0 {
		t.Fatalf("wait for alice's first job: exit %d: %s", code, out)
	}
	if out0 := mustRead(t, filepath.Join(aDir, "out.0")); !strings.Contains(out0, "marker-7f3a") || !strings.Contains(out0, "alice 0\ndone") {
		t.Errorf("out.0:\n%s", out0)
	}
	if h := p.historyAd(t, fmt.Sprintf("%d.0", a)); h["NumRestores"] != 1.0 {
		t.Errorf("NumRestores %v, want 1", h["NumRestores"])
	}

	// Four starts of three jobs, one pull: the image's two layers were
	// unpacked once.
	ready, unpacked := 0, 0
	re := regexp.MustCompile(`container image ready.* unpacked=(\d+)`)
	_ = filepath.WalkDir(filepath.Join(p.testPool.dir, "execute"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "starter.") || !strings.HasSuffix(d.Name(), ".log") {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[1])
			ready++
			unpacked += n
		}
		return nil
	})
	if ready != 4 || unpacked != 2 {
		t.Errorf("starter logs: %d starts readied the image, unpacking %d layers; want 4 starts, 2 layers", ready, unpacked)
	}
}

// TestContainerImageKeptByTheClaim: the jobs of one claim in the same
// image file read it once, and again only once it changed: a job after
// the change runs in the new image.
func TestContainerImageKeptByTheClaim(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	p := startPoolWith(t, 1, "SANDBOX = container\nNUM_SLOTS = 1")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "img.tar")
	imagetest.WriteTarball(t, imagetest.Image(t, map[string]string{"etc/harrier-test-image": "marker-one\n"}), tarball)
	writeFile(t, filepath.Join(dir, "look.sh"), "#!/bin/sh\ncat /etc/harrier-test-image\nwhile [ ! -e go.$1 ]; do sleep 0.1; done\n", 0o755)
	c := p.submit(t, dir, "look.sub", `universe = container
container_image = img.tar
executable = look.sh
arguments = $(Process)
output = out.$(Process)
error = err.$(Process)
should_transfer_files = NO
queue 3
`)
	ran := func(proc int, marker string) {
		t.Helper()
		out := filepath.Join(dir, fmt.Sprintf("out.%d", proc))
		eventually(t, 60*time.Second, fmt.Sprintf("job %d to run in its image", proc), func() bool {
			b, _ := os.ReadFile(out)
			return len(b) > 0
		})
		if got := mustRead(t, out); got != marker+"\n" {
			t.Errorf("job %d ran in the image of %q, want %s", proc, got, marker)
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("go.%d", proc)), "", 0o644)
	}
	ran(0, "marker-one")
	ran(1, "marker-one")
	// A new image in the file's place, for the claim's third job.
	imagetest.WriteTarball(t, imagetest.Image(t, map[string]string{"etc/harrier-test-image": "marker-two\n"}), tarball+".new")
	if err := os.Rename(tarball+".new", tarball); err != nil {
		t.Fatal(err)
	}
	ran(2, "marker-two")
	p.waitCluster(t, c, 3)
	matches := p.historyMatches(t)
	if matches < 1 || matches >= 3 {
		t.Fatalf("3 jobs on one slot took %d matches: they did not share a claim", matches)
	}
	kept := 0
	_ = filepath.WalkDir(filepath.Join(p.dir, "execute"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "starter.") && strings.HasSuffix(d.Name(), ".log") {
			b, _ := os.ReadFile(path)
			kept += strings.Count(string(b), "kept=true")
		}
		return nil
	})
	if kept != 1 {
		t.Errorf("the image was kept for %d of the claim's jobs, want 1 (the second)", kept)
	}
}

// TestContainerTransferJobCheckpoint: a job with transferred files, in
// its own image (from a registry on loopback), that removed a file from its image's root (the overlay
// marks it with a whiteout, a device node, in its upper directory) and
// writes there, is checkpointed with its scratch directory and restored:
// its count, its output and its root's changes go on unbroken. The
// scratch directory's archive leaves the image root's directory to the
// image's own archive: it held the whiteout, which no transfer carries,
// and the checkpoint failed.
func TestContainerTransferJobCheckpoint(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	reg := newTestRegistry(t, "", "")
	reg.push("lab/count:1", imagetest.Image(t, map[string]string{"etc/harrier-test-image": "transfer-image\n", "scratchpad/": "", "pad/": "777", "pad/gone": "x\n"}))
	bin := publicBinary(t)
	p := &hostile{testPool: startPoolFrom(t, bin, 1, "SANDBOX = container\nNUM_SLOTS = 2\nIMAGE_REGISTRY_CA = "+reg.caFile), bin: bin}
	alice := newUser(t)
	uid, gid := lookupIDs(t, alice.Username)
	work := filepath.Join(alice.HomeDir, "job")
	script := strings.Replace(containerCountScript, "#!/bin/sh\n", "#!/bin/sh\nrm /pad/gone || exit 3\n", 1) +
		"test -e /pad/gone && echo 'the removed file is back' >> root.txt\n"
	writeFile(t, filepath.Join(work, "count.sh"), script, 0o755)
	writeFile(t, filepath.Join(work, "count.sub"), `universe = container
container_image = docker://`+reg.addr+`/lab/count:1
executable = count.sh
arguments = 40
output = count.out
error = count.err
log = count.log
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
queue
`, 0o644)
	chownAll(t, work, uid, gid)
	out, code := p.tool(t, alice.Username, "submit", filepath.Join(work, "count.sub"))
	id := fmt.Sprintf("%d.0", submitted(t, out, code))
	counted := func() int {
		m, _ := filepath.Glob(filepath.Join(p.testPool.dir, "execute", "*", "scratch.*", "count.txt"))
		if len(m) == 0 {
			return 0
		}
		return len(counts(t, filepath.Dir(m[0])))
	}
	eventually(t, 90*time.Second, "the job to count in its scratch directory", func() bool {
		if why, _ := p.tool(t, alice.Username, "q", "-af", "HoldReason", id); strings.TrimSpace(why) != "undefined" && strings.TrimSpace(why) != "" {
			t.Fatalf("the job is held: %s", why)
		}
		return counted() >= 8
	})
	if out, code := p.tool(t, alice.Username, "vacate", id); code != 0 {
		t.Fatalf("vacate: exit %d: %s", code, out)
	}
	if out, code := p.tool(t, alice.Username, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s\nerr: %s", code, out, mustRead(t, filepath.Join(work, "count.err")))
	}
	h := p.historyAd(t, id)
	if h["NumRestores"] != 1.0 || h["LastCheckpointFailure"] != nil {
		t.Errorf("NumRestores %v, LastCheckpointFailure %v: want one restore", h["NumRestores"], h["LastCheckpointFailure"])
	}
	checkCounted(t, work, 40)
	if got := mustRead(t, filepath.Join(work, "root.txt")); got != "root 40 transfer-image\n" {
		t.Errorf("root.txt %q: the job's root did not keep its changes across the checkpoint", got)
	}
}

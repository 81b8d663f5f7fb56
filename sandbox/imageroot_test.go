package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/imagecache"
	"harrier.dev/harrier/imagecache/imagetest"
)

// A job in its own image sees the image's files, not the machine's, at
// its root; its scratch and working directories are where they would be
// on the machine's root; its writes to the image's root land in its
// upper directory, root's alone, and the root is gone after the job.
func TestJobInImage(t *testing.T) {
	r := testRunner(t, nil)
	im := cachedImage(t, map[string]string{"etc/harrier-test-image": "marker-42\n", "shared/": "777"})
	scratch := t.TempDir()
	if err := os.Chmod(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	res := runJob(t, r, `cat /etc/harrier-test-image; ls /; test -e /etc/os-release && echo host-etc
echo hi > /tmp/t && cat /tmp/t; echo s > /srv/s; echo w > `+work+`/w; ls /srv; echo r > /shared/r`, func(task *Task) {
		task.ImageLayers, task.ScratchDir, task.Dir = im.Layers, scratch, work
	})
	if res.exit.Code != 0 {
		t.Fatalf("exit %+v stderr %q", res.exit, res.stderr)
	}
	out := res.stdout
	if !strings.Contains(out, "marker-42") || !strings.Contains(out, "busybox") && !strings.Contains(out, "bin") {
		t.Errorf("the job does not see its image: %q", out)
	}
	if strings.Contains(out, "host-etc") {
		t.Errorf("the job sees the machine's /etc: %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "s")); err != nil || string(b) != "s\n" {
		t.Errorf("scratch write: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "w")); err != nil || string(b) != "w\n" {
		t.Errorf("working directory write: %q %v", b, err)
	}
	st, err := os.Stat(filepath.Join(scratch, ImageRootDir))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("upper directory %v %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(upperDir(scratch), "shared", "r")); err != nil || string(b) != "r\n" {
		t.Errorf("the job's write to its root is not in its upper directory: %q %v", b, err)
	}
	if es, _ := os.ReadDir(imageRootsDir(r.cfg.StateRoot)); len(es) != 0 {
		t.Errorf("image roots left mounted: %v", es)
	}
}

// TestImageJobCheckpointHops checkpoints a counting job in its own image
// and restores it twice onto a scratch directory of its own, as on
// another machine with the same image in its cache: the job keeps a
// descriptor open on a file in its image's root (its upper directory)
// and has deleted one of the image's files, and each restore finds its
// root as the dump left it. Its count, in its working directory and in
// its root, goes on unbroken, and so does its reading of its standard
// input, a file handed to it as a starter hands the submit file's input.
func TestImageJobCheckpointHops(t *testing.T) {
	if _, err := exec.LookPath("criu"); err != nil {
		t.Skip("no criu on PATH (scripts/setup installs it)")
	}
	r := testRunner(t, nil)
	ctx := context.Background()
	im := cachedImage(t, map[string]string{"data/": "777", "data/gone": "x\n"})
	work := t.TempDir()
	if err := os.Chown(work, r.user.uid, r.user.gid); err != nil {
		t.Fatal(err)
	}
	countFile := filepath.Join(work, "count.txt")
	key, err := checkpoint.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	seal := key.For("submit#6.0#1700000000", "alice")
	var input strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&input, "line%d\n", i)
	}
	task := func() *Task {
		scratch := t.TempDir()
		if err := os.Chmod(scratch, 0o700); err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(in, []byte(input.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return &Task{ID: "6.0", Path: "/bin/sh", Args: []string{"-c",
			"rm /data/gone; exec 3>>/data/count; i=0; while :; do i=$((i+1)); read -r l; echo $i >&3; echo $i >> count.txt; echo $i $l >> reads.txt; sleep 0.1; done"},
			Dir: work, ScratchDir: scratch, ImageLayers: im.Layers, Stdin: f}
	}
	first := task()
	s := startJob(t, r, first)
	n := len(waitCounted(t, countFile, 3))
	scratch := first.ScratchDir
	for hop := 1; hop <= 2; hop++ {
		img := filepath.Join(t.TempDir(), "img")
		// Waited for meanwhile, as a starter does: the dump ends the job,
		// whose container then goes while its root is being archived.
		ended := s.waitAsync()
		if _, err := s.job.Checkpoint(ctx, checkpoint.DumpOptions{ImageDir: img}); err != nil {
			_ = s.job.Signal(9)
			<-ended
			t.Fatalf("checkpoint %d: %v", hop, err)
		}
		if res := <-ended; res.err != nil || res.stderr != "" {
			t.Errorf("the job's end: %v, errors: %s", res.err, res.stderr)
		}
		var buf bytes.Buffer
		if _, err := checkpoint.Pack(&buf, img, seal); err != nil {
			t.Fatal(err)
		}
		received := img + ".received"
		if _, err := checkpoint.Unpack(&buf, received, seal); err != nil {
			t.Fatal(err)
		}
		next := task()
		s, scratch = restoreJob(t, r, next, received), next.ScratchDir
		n = len(waitCounted(t, countFile, n+3))
		t.Logf("hop %d: counted to %d", hop, n)
	}
	_ = s.job.Signal(9)
	if res := s.wait(t); res.stderr != "" {
		t.Errorf("the job's errors: %s", res.stderr)
	}
	counts := waitCounted(t, countFile, 0)
	for i, v := range counts {
		if v != i+1 {
			t.Fatalf("count.txt breaks at line %d: %d", i+1, v)
		}
	}
	reads, err := os.ReadFile(filepath.Join(work, "reads.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(reads), "\n"), "\n") {
		if want := fmt.Sprintf("%d line%d", i+1, i+1); l != want {
			t.Fatalf("reads.txt line %d: %q, want %q", i+1, l, want)
		}
	}
	inRoot := waitCounted(t, filepath.Join(upperDir(scratch), "data", "count"), 0)
	if len(inRoot) != len(counts) || inRoot[len(inRoot)-1] != counts[len(counts)-1] {
		t.Errorf("the count in the job's root is %d numbers to %d, in its working directory %d",
			len(inRoot), inRoot[len(inRoot)-1], len(counts))
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(upperDir(scratch), "data", "gone"), &st); err != nil ||
		st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("the job's deletion of /data/gone did not travel: %+v %v", st, err)
	}
}

// A checkpoint made outside an image cannot be restored into one.
func TestImageRestoreNeedsRootArchive(t *testing.T) {
	_, err := restoreUpper(t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "does not hold the job's root") {
		t.Errorf("restore without an archive: %v", err)
	}
}

// BenchmarkContainerTrueInImage is BenchmarkContainerTrue in a busybox
// image already in the cache: the warm start of a job in its own image,
// each in a scratch directory of its own.
func BenchmarkContainerTrueInImage(b *testing.B) {
	r := testRunner(b, nil)
	im := cachedImage(b, nil)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		// Each job's scratch directory is its own, made and removed
		// around it as a startd does, since its root's writes go there.
		scratch, err := os.MkdirTemp(dir, "scratch")
		if err != nil {
			b.Fatal(err)
		}
		task := &Task{ID: "1.0", Path: "/bin/true", Dir: scratch, ScratchDir: scratch, ImageLayers: im.Layers}
		res := startJob(b, r, task).wait(b)
		if res.exit.Code != 0 {
			b.Fatalf("exit %+v", res.exit)
		}
		if err := os.RemoveAll(scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// The upper directory of a job's root is found by name in its scratch
// directory, which the job's user owns. What that user put at that name
// (an input file, or the running job itself, which may rename what is
// there) must never lead root elsewhere: not when the root is mounted,
// where the job's writes would land in a directory of the machine's,
// and not when it is checkpointed, where root would read a directory
// the job may not into the job's image.
func TestImageRootNotLedElsewhere(t *testing.T) {
	if _, err := exec.LookPath("criu"); err != nil {
		t.Skip("no criu on PATH (scripts/setup installs it)")
	}
	r := testRunner(t, nil)
	ctx := context.Background()
	im := cachedImage(t, map[string]string{"pub/": "777"})
	scratchDir := func() string {
		d := t.TempDir()
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}

	// An input named like the root's directory, whose "upper" leads to
	// a directory of the machine's.
	victim := t.TempDir()
	scratch := scratchDir()
	if err := os.MkdirAll(filepath.Join(scratch, ImageRootDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(scratch, ImageRootDir, "upper")); err != nil {
		t.Fatal(err)
	}
	res := runJob(t, r, "echo planted > /pub/planted && cat /pub/planted", func(task *Task) {
		task.ImageLayers, task.ScratchDir, task.Dir = im.Layers, scratch, scratch
	})
	if res.exit.Code != 0 || res.stdout != "planted\n" {
		t.Errorf("the job: exit %+v, out %q, err %q", res.exit, res.stdout, res.stderr)
	}
	if es, _ := os.ReadDir(victim); len(es) != 0 {
		t.Errorf("the job's root was written into the machine's %s: %v", victim, es)
	}

	// A running job that puts a link to a directory of the machine's in
	// place of its root's directory before it is checkpointed.
	secret := t.TempDir()
	if err := os.MkdirAll(filepath.Join(secret, "upper"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(secret, "upper", "secret.txt"), "s3cret-1f9c\n")
	task := &Task{ID: "7.0", Path: "/bin/sh", Args: []string{"-c",
		"echo mine > /pub/mine; mv /srv/" + ImageRootDir + " /srv/moved && ln -s " + secret + " /srv/" + ImageRootDir +
			" && echo swapped > /srv/swapped; exec sleep 1000"},
		ImageLayers: im.Layers}
	task.ScratchDir = scratchDir()
	task.Dir = task.ScratchDir
	s := startJob(t, r, task)
	eventuallyT(t, func() bool { _, err := os.Stat(filepath.Join(task.ScratchDir, "swapped")); return err == nil }, func() {
		_ = s.job.Signal(9)
		res := s.wait(t)
		t.Logf("the job: exit %+v, err %q", res.exit, res.stderr)
	})
	img := filepath.Join(t.TempDir(), "img")
	_, err := s.job.Checkpoint(ctx, checkpoint.DumpOptions{ImageDir: img})
	if err != nil {
		_ = s.job.Signal(9)
		s.wait(t)
		t.Fatalf("checkpoint: %v", err)
	}
	s.wait(t)
	archive, err := os.ReadFile(filepath.Join(img, rootArchive))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(archive, []byte("s3cret-1f9c")) {
		t.Errorf("the checkpoint holds a file of the machine's the job led root to")
	}
	if !bytes.Contains(archive, []byte("mine")) {
		t.Errorf("the checkpoint lacks the job's own write to its root")
	}
}

// writeFileT writes a file of root's alone.
func writeFileT(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventuallyT waits up to a minute for cond, and calls failed if it does
// not come.
func eventuallyT(t *testing.T, cond func() bool, failed func()) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	failed()
	t.Fatal("timed out")
}

// upperDir is the upper directory of the root of a job working in
// scratch, as the machine names it.
func upperDir(scratch string) string { return filepath.Join(scratch, ImageRootDir, "upper") }

// The mount points made above an image's layers look as the image's
// directories do (owner and mode), follow overlayfs's whiteouts and
// opaque directories, and are not made where the image has something
// else than a directory (a link the container's init follows instead).
func TestMountPointsLayer(t *testing.T) {
	bottom, upper, top := t.TempDir(), t.TempDir(), t.TempDir()
	mkdir := func(p string, mode uint32, uid int) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Join(bottom, "home"), 0o750, 1000)
	mkdir(filepath.Join(bottom, "opt", "sub"), 0o700, 1000)
	mkdir(filepath.Join(bottom, "srv"), 0o755, 0)
	mkdir(filepath.Join(upper, "srv"), 0o711, 0)
	if err := unix.Setxattr(filepath.Join(upper, "srv"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"var", "x"}, {"srv/a", "/etc"}, {"tmp", "/tmp"}} {
		if err := os.Symlink(l[1], filepath.Join(bottom, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Join(upper, "tmp"), 0o1777, 0)
	if err := unix.Mknod(filepath.Join(upper, "opt"), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	layers := []string{upper, bottom}
	for _, p := range []string{"/home/alice/job", "/var/tmp", "/opt/sub", "/srv/a", "/tmp", "/proc"} {
		if err := makeMountPoint(top, layers, p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, c := range []struct {
		path string
		mode uint32 // 0: not made
		uid  uint32
	}{
		{"home", 0o750, 1000}, {"home/alice", 0o755, 0}, {"home/alice/job", 0o755, 0},
		{"var", 0, 0},                            // a link in the image
		{"opt", 0o755, 0}, {"opt/sub", 0o755, 0}, // the image's opt is whited out
		{"srv", 0o711, 0}, {"srv/a", 0o755, 0}, // the link below the opaque srv is hidden
		{"tmp", 0o1777, 0}, {"proc", 0o755, 0},
	} {
		var st unix.Stat_t
		err := unix.Lstat(filepath.Join(top, c.path), &st)
		if c.mode == 0 {
			if err == nil {
				t.Errorf("%s made, though the image has a link there", c.path)
			}
			continue
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o7777 != c.mode || st.Uid != c.uid {
			t.Errorf("%s: mode %o uid %d (%v), want a directory %o of %d", c.path, st.Mode&0o7777, st.Uid, err, c.mode, c.uid)
		}
	}
}

// cachedImage is a busybox image with files (see imagetest.Image), in
// a cache of the test's own, held until the test ends.
func cachedImage(tb testing.TB, files map[string]string) *imagecache.Image {
	tb.Helper()
	cache, err := imagecache.New(tb.TempDir(), 0, nil)
	if err != nil {
		tb.Fatal(err)
	}
	im, err := cache.Acquire(context.Background(), imagetest.Image(tb, files), "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = im.Release() })
	return im
}

// A slot keeps the root of a job in its image that left it untouched,
// for its next job in the same image, and only then: a job that wrote
// to its root, even a file it removed again, or that swapped the root's
// directory in its scratch directory for one of its own, leaves a root
// that is unmounted, and the job after it gets a fresh one. Every job
// sees the image as it is.
func TestImageRootKeptOnlyUntouched(t *testing.T) {
	r := testRunner(t, nil)
	im := cachedImage(t, map[string]string{"shared/": "777", "shared/marker": "image\n"})
	other := cachedImage(t, map[string]string{"shared/": "777", "shared/marker": "other\n"})
	run := func(script string, layers []string) (result, *imageRoot) {
		t.Helper()
		scratch := t.TempDir()
		if err := os.Chmod(scratch, 0o700); err != nil {
			t.Fatal(err)
		}
		s := startJob(t, r, &Task{ID: "1.0", Path: "/bin/sh", Args: []string{"-c", script},
			ScratchDir: scratch, ImageLayers: layers})
		root := s.job.root
		res := s.wait(t)
		if res.exit.Code != 0 {
			t.Fatalf("%q: exit %+v stderr %q", script, res.exit, res.stderr)
		}
		if _, err := os.Lstat(filepath.Join(scratch, ImageRootDir)); r.kept != nil && err == nil {
			t.Errorf("%q: the kept root is still in the job's scratch directory", script)
		}
		return res, root
	}
	kept := func() *imageRoot {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.kept
	}
	const look = "cat /shared/marker; ls /shared /"
	first, root1 := run(look, im.Layers)
	if kept() != root1 {
		t.Fatalf("an untouched root is not kept")
	}
	for _, step := range []struct{ name, script string }{
		{"a file made and removed", "touch /shared/made && rm /shared/made"},
		{"a file of the image renamed", "mv /shared/marker /shared/moved"},
		{"a file of the image removed", "rm /shared/marker"},
		{"the root's directory swapped", "mv /srv/" + ImageRootDir + " /srv/moved && mkdir /srv/" + ImageRootDir},
	} {
		before := kept()
		_, root := run(step.script, im.Layers)
		if root != before {
			t.Errorf("%s: the job did not get the kept root", step.name)
		}
		if kept() != nil {
			t.Errorf("%s: the root is kept", step.name)
		}
		next, root := run(look, im.Layers)
		if root == before {
			t.Errorf("%s: the next job got the used root", step.name)
		}
		if next.stdout != first.stdout {
			t.Errorf("%s: the next job sees %q, not the image as it is %q", step.name, next.stdout, first.stdout)
		}
		if kept() != root {
			t.Errorf("%s: the next job's untouched root is not kept", step.name)
		}
	}
	before := kept()
	res, root := run("cat /shared/marker", other.Layers)
	if root == before || res.stdout != "other\n" {
		t.Errorf("a job in another image got the kept root: %q", res.stdout)
	}
	if err := Cleanup(r.cfg.StateRoot, r.cfg.Slot); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(imageRootsDir(r.cfg.StateRoot)); len(es) != 0 {
		t.Errorf("image roots left mounted after the slot's cleanup: %v", es)
	}
	if _, err := os.Lstat(heldRoot(r.cfg.StateRoot, r.cfg.Slot)); err == nil {
		t.Errorf("the kept root's directory is left after the slot's cleanup")
	}
}

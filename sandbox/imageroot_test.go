package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	cache, err := imagecache.New(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := imagetest.Image(t, map[string]string{"etc/harrier-test-image": "marker-42\n"})
	im, err := cache.Acquire(context.Background(), img, "")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Release()
	scratch := t.TempDir()
	if err := os.Chmod(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	res := runJob(t, r, `cat /etc/harrier-test-image; ls /; test -e /etc/os-release && echo host-etc
echo hi > /tmp/t && cat /tmp/t; echo s > /srv/s; echo w > `+work+`/w; ls /srv`, func(task *Task) {
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
	st, err := os.Stat(filepath.Join(scratch, imageRootDir))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("upper directory %v %v", st, err)
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
// its root, goes on unbroken.
func TestImageJobCheckpointHops(t *testing.T) {
	if _, err := exec.LookPath("criu"); err != nil {
		t.Skip("no criu on PATH (scripts/setup installs it)")
	}
	r := testRunner(t, nil)
	ctx := context.Background()
	cache, err := imagecache.New(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := cache.Acquire(ctx, imagetest.Image(t, map[string]string{"data/": "777", "data/gone": "x\n"}), "")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Release()
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
	task := func() *Task {
		scratch := t.TempDir()
		if err := os.Chmod(scratch, 0o700); err != nil {
			t.Fatal(err)
		}
		return &Task{ID: "6.0", Path: "/bin/sh", Args: []string{"-c",
			"rm /data/gone; exec 3>>/data/count; i=0; while :; do i=$((i+1)); echo $i >&3; echo $i >> count.txt; sleep 0.1; done"},
			Dir: work, ScratchDir: scratch, ImageLayers: im.Layers}
	}
	first := task()
	s := startJob(t, r, first)
	n := len(waitCounted(t, countFile, 3))
	scratch := first.ScratchDir
	for hop := 1; hop <= 2; hop++ {
		img := filepath.Join(t.TempDir(), "img")
		if _, err := s.job.Checkpoint(ctx, checkpoint.DumpOptions{ImageDir: img}); err != nil {
			_ = s.job.Signal(9)
			s.wait(t)
			t.Fatalf("checkpoint %d: %v", hop, err)
		}
		if res := s.wait(t); res.stderr != "" {
			t.Errorf("the job's errors: %s", res.stderr)
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
	err := restoreUpper(t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "does not hold the job's root") {
		t.Errorf("restore without an archive: %v", err)
	}
}

// BenchmarkContainerTrueInImage is BenchmarkContainerTrue in a busybox
// image already in the cache: the warm start of a job in its own image.
func BenchmarkContainerTrueInImage(b *testing.B) {
	r := testRunner(b, nil)
	cache, err := imagecache.New(b.TempDir(), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	im, err := cache.Acquire(context.Background(), imagetest.Image(b, nil), "")
	if err != nil {
		b.Fatal(err)
	}
	defer im.Release()
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		task := &Task{ID: "1.0", Path: "/bin/true", Dir: dir, ScratchDir: dir, ImageLayers: im.Layers}
		res := startJob(b, r, task).wait(b)
		if res.exit.Code != 0 {
			b.Fatalf("exit %+v", res.exit)
		}
	}
}

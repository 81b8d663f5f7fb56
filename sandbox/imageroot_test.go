package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	im, err := cache.Acquire(context.Background(), img)
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

// A job in its own image refuses checkpoints, saying why.
func TestImageJobRefusesCheckpoint(t *testing.T) {
	r := testRunner(t, nil)
	cache, err := imagecache.New(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := cache.Acquire(context.Background(), imagetest.Image(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Release()
	s := startJob(t, r, &Task{ID: "2.0", Path: "/bin/sleep", Args: []string{"100"}, ImageLayers: im.Layers})
	_, err = s.job.Checkpoint(context.Background(), checkpoint.DumpOptions{ImageDir: t.TempDir()})
	if !errors.Is(err, ErrImageCheckpoint) {
		t.Errorf("checkpoint: %v, want ErrImageCheckpoint", err)
	}
	if err := s.job.Signal(9); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

// BenchmarkContainerTrueInImage is BenchmarkContainerTrue in a busybox
// image already in the cache: the warm start of a job in its own image.
func BenchmarkContainerTrueInImage(b *testing.B) {
	r := testRunner(b, nil)
	cache, err := imagecache.New(b.TempDir(), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	im, err := cache.Acquire(context.Background(), imagetest.Image(b, nil))
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

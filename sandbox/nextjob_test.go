package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestNextJobSeesNothingOfTheLast: jobs one after another on one slot
// (one Runner, as the jobs of a claim) share nothing a job can write
// outside its scratch directory: not /tmp, /dev/shm or /dev/mqueue, not
// the root of its image, not the machine's own directories.
func TestNextJobSeesNothingOfTheLast(t *testing.T) {
	r := testRunner(t, nil)
	const write = `for f in /tmp/left /dev/shm/left /dev/mqueue/left /etc/left /usr/left /left /data/left; do
  echo x > $f 2>/dev/null && echo "wrote $f"
done; true`
	const look = `for f in /tmp/left /dev/shm/left /dev/mqueue/left /etc/left /usr/left /left /data/left; do
  test -e $f && echo "sees $f"
done; true`
	host := func(id string) func(*Task) {
		return func(task *Task) { task.ID, task.ScratchDir = id, t.TempDir() }
	}
	first := runJob(t, r, write, host("1.0"))
	for _, f := range []string{"/tmp/left", "/dev/shm/left"} {
		if !strings.Contains(first.stdout, "wrote "+f) {
			t.Errorf("the first job could not write %s, which is its own: %q %q", f, first.stdout, first.stderr)
		}
	}
	if second := runJob(t, r, look, host("2.0")); second.exit.Code != 0 || second.stdout != "" {
		t.Errorf("the next job on the slot: %+v, stdout %q", second.exit, second.stdout)
	}

	// In its own image the job may write its root, in its scratch
	// directory's overlay: the next job, with its own scratch directory,
	// gets the image as it was (its /data is open to all).
	im := cachedImage(t, map[string]string{"data/": ""})
	inImage := func(id string) func(*Task) {
		return func(task *Task) {
			scratch := t.TempDir()
			if err := os.Chmod(scratch, 0o700); err != nil {
				t.Fatal(err)
			}
			task.ID, task.ScratchDir, task.Dir, task.ImageLayers = id, scratch, scratch, im.Layers
		}
	}
	first = runJob(t, r, write, inImage("3.0"))
	if !strings.Contains(first.stdout, "wrote /data/left") {
		t.Errorf("the first job could not write its image's /data: %q %q", first.stdout, first.stderr)
	}
	if second := runJob(t, r, look, inImage("4.0")); second.exit.Code != 0 || second.stdout != "" {
		t.Errorf("the next job in the image: %+v, stdout %q", second.exit, second.stdout)
	}
}

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHostRootShowsNoOtherMount: a job on the machine's root sees the
// host's files read-only, but no mount made on the host (another job's
// working directory through iofs, its image root): under a directory the
// host mounted over, it finds the directory as the root file system
// holds it.
func TestHostRootShowsNoOtherMount(t *testing.T) {
	r := testRunner(t, nil)
	if memStateDir(memStateParents) == "" {
		t.Skip("no memory file system: containers' roots are skeletons (see prepareRootfs)")
	}
	dir, err := os.MkdirTemp("/var/tmp", "harrier-mount-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The job's first container makes the host root, if need be; the
	// mount comes after it.
	if res := runJob(t, r, "true", nil); res.exit.Code != 0 {
		t.Fatalf("first job: %+v %s", res.exit, res.stderr)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runJob(t, r, "ls -a "+dir+"; touch /var/tmp/harrier-escape 2>/dev/null && echo wrote; true",
		func(task *Task) { task.ID = "2.0" })
	if res.exit.Code != 0 {
		t.Fatalf("exit %+v, stderr %s", res.exit, res.stderr)
	}
	if strings.Contains(res.stdout, "secret") {
		t.Errorf("the job sees a mount made on the host after its root: %q", res.stdout)
	}
	if !strings.Contains(res.stdout, ".") {
		t.Errorf("the job does not see the host's directory %s: %q %q", dir, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "wrote") {
		os.Remove("/var/tmp/harrier-escape")
		t.Errorf("the job wrote the host's /var/tmp")
	}
}

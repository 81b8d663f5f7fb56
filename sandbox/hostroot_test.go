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

// TestJobDirWhereTheMachineHasNone: a job whose directory (served from
// the submit machine) is at a path this machine lacks, or below a
// directory closed to the slot's user (a home directory of mode 0700),
// finds it at its path all the same, and nothing else of the machine's
// in the directory above it (/home).
func TestJobDirWhereTheMachineHasNone(t *testing.T) {
	r := testRunner(t, nil)
	closed, err := os.MkdirTemp("/home", "harrier-closed-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(closed)
	if err := os.Mkdir(filepath.Join(closed, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join("/home", "harrier-absent-"+filepath.Base(t.TempDir()), "run")
	for _, dir := range []string{absent, filepath.Join(closed, "run")} {
		src := t.TempDir()
		if err := os.Chmod(src, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "hello"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runJob(t, r, `realpath .; cat hello; ls -A /home; cd "$(pwd -P)" && echo > made && echo made`, func(task *Task) {
			task.Dir, task.DirSource = dir, src
		})
		want := dir + "\nhi\n" + filepath.Base(filepath.Dir(dir)) + "\nmade\n"
		if res.exit.Code != 0 || res.stdout != want {
			t.Errorf("the job in %s: exit %+v, stdout %q, want %q; stderr %s", dir, res.exit, res.stdout, want, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(src, "made")); err != nil {
			t.Errorf("the job's file is not in its directory: %v", err)
		}
	}
}

func TestDirTop(t *testing.T) {
	for dir, want := range map[string]string{
		"/home/alice/run": "/home", "/data/x": "/data", "/home": "", "/": "",
		"/tmp/x/y": "", "/srv/x": "", "/var/lib/x": "", "/usr/local/x": "", "/opt/x": "",
	} {
		if got := dirTop(dir); got != want {
			t.Errorf("dirTop(%q) = %q, want %q", dir, got, want)
		}
	}
}

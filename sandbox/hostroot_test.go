package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
// in the directory above it (/home); where the machine has the path open
// to the slot's user, the job sees the machine's /home around it.
func TestJobDirWhereTheMachineHasNone(t *testing.T) {
	r := testRunner(t, nil)
	var homes []string
	for _, mode := range []os.FileMode{0o700, 0o755} {
		d, err := os.MkdirTemp("/home", "harrier-dir-")
		if err != nil {
			t.Skip(err)
		}
		defer os.RemoveAll(d)
		if err := os.Mkdir(filepath.Join(d, "run"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		homes = append(homes, d)
	}
	closed, open := filepath.Join(homes[0], "run"), filepath.Join(homes[1], "run")
	absent := filepath.Join("/home", "harrier-absent-"+filepath.Base(t.TempDir()), "run")
	for _, dir := range []string{absent, closed, open} {
		src := t.TempDir()
		if err := os.Chmod(src, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "hello"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runJob(t, r, `realpath .; cat hello; cd "$(pwd -P)" && echo > made && echo made; ls -A /home`, func(task *Task) {
			task.Dir, task.DirSource = dir, src
		})
		if want := dir + "\nhi\nmade\n"; res.exit.Code != 0 || !strings.HasPrefix(res.stdout, want) {
			t.Errorf("the job in %s: exit %+v, stdout %q, want %q first; stderr %s", dir, res.exit, res.stdout, want, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(src, "made")); err != nil {
			t.Errorf("the job's file is not in its directory: %v", err)
		}
		home := strings.Fields(strings.TrimPrefix(res.stdout, dir+"\nhi\nmade\n"))
		own := filepath.Base(filepath.Dir(dir))
		if dir == open {
			if !slices.Contains(home, filepath.Base(homes[0])) || !slices.Contains(home, own) {
				t.Errorf("the job in %s, open on this machine, sees /home as %v, want the machine's", dir, home)
			}
		} else if !slices.Equal(home, []string{own}) {
			t.Errorf("the job in %s sees /home as %v, want its own directory alone", dir, home)
		}
	}
}

// TestDirTopMissing: a job whose directory is below a top-level
// directory this machine lacks does not start, and says why.
func TestDirTopMissing(t *testing.T) {
	r := testRunner(t, nil)
	dir := "/harrier-absent-" + filepath.Base(t.TempDir()) + "/run"
	_, err := r.Start(context.Background(), &Task{ID: "1.0", Path: "/bin/true", Dir: dir, DirSource: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "this machine has no directory /harrier-absent-") {
		t.Errorf("start in %s: %v, want a reason naming the missing directory", dir, err)
	}
}

func TestDirTop(t *testing.T) {
	nobody := identity{name: "nobody", uid: 65534, gid: 65534}
	for dir, want := range map[string]string{
		"/home/harrier-absent/run": "/home", "/data-absent/x": "/data-absent", "/home": "", "/": "",
		"/tmp/x/y": "", "/srv/x": "", "/var/lib/x": "", "/usr/local/x": "", "/opt/x": "",
	} {
		if got := dirTop(dir, nobody); got != want {
			t.Errorf("dirTop(%q) = %q, want %q", dir, got, want)
		}
	}
}

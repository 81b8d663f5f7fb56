package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMemStateDir: the containers' state goes to a directory of root's
// own on the first memory file system, never to one another user made,
// nor through a symbolic link, nor to a disk file system.
func TestMemStateDir(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs (not in -short)")
	}
	disk := t.TempDir()
	mem := t.TempDir()
	if err := unix.Mount("tmpfs", mem, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mem, unix.MNT_DETACH) })
	want := filepath.Join(mem, memStateName)

	if got := memStateDir([]string{disk, mem}); got != want {
		t.Fatalf("memStateDir = %q, want %q (the disk directory is skipped)", got, want)
	}
	if fi, err := os.Lstat(want); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, %v; want a directory closed to others", want, fi, err)
	}
	if got := memStateDir([]string{disk}); got != "" {
		t.Errorf("memStateDir on a disk file system = %q, want none", got)
	}

	// Another user's directory in its place, or one open to others.
	if err := os.Chown(want, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got := memStateDir([]string{mem}); got != "" {
		t.Errorf("memStateDir with another user's directory = %q, want none", got)
	}
	if err := os.Chown(want, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(want, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := memStateDir([]string{mem}); got != "" {
		t.Errorf("memStateDir with a directory open to all = %q, want none", got)
	}

	// A symbolic link to a directory of root's.
	if err := os.Remove(want); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(mem, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, want); err != nil {
		t.Fatal(err)
	}
	if got := memStateDir([]string{mem}); got != "" {
		t.Errorf("memStateDir through a symbolic link = %q, want none", got)
	}
}

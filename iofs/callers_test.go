package iofs_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/iofs"
)

// TestOtherUsersRefused: a root starter's mount is open to other users
// for the job's sake, but only the job's user and root get an answer.
// Another user of the execute machine who finds the mount point can
// neither look up, open, list, create nor remove anything in it, though
// the owner's files are served with the owner's rights.
func TestOtherUsersRefused(t *testing.T) {
	const jobUID, otherUID = 65534, 4242
	e := newEnvWith(t, "", iofs.Options{HTTPClient: http.DefaultClient, JobUID: jobUID})
	for d := e.mnt; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil && d != e.mnt {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.submit, "private.txt"), []byte("the owner's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	as := func(uid uint32, fn func() error) error {
		return asuser.Do(asuser.Credential{UID: uid, GID: uid, Groups: []uint32{}}, fn)
	}
	private := filepath.Join(e.mnt, "private.txt")
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("another user's %s: %v, want EACCES", what, err)
		}
	}

	// Before anyone has looked: the name itself is refused.
	refused("stat", as(otherUID, func() error { _, err := os.Stat(private); return err }))
	refused("listing", as(otherUID, func() error { _, err := os.ReadDir(e.mnt); return err }))

	// The job reads the owner's file.
	var got []byte
	if err := as(jobUID, func() (err error) { got, err = os.ReadFile(private); return err }); err != nil || string(got) != "the owner's\n" {
		t.Fatalf("the job's read: %q, %v", got, err)
	}

	// Now the name is in the kernel's cache: opening it is still refused.
	refused("read", as(otherUID, func() error { _, err := os.ReadFile(private); return err }))
	refused("open for writing", as(otherUID, func() error {
		f, err := os.OpenFile(private, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err
	}))
	refused("create", as(otherUID, func() error {
		return os.WriteFile(filepath.Join(e.mnt, "planted"), []byte("x"), 0o644)
	}))
	refused("remove", as(otherUID, func() error { return os.Remove(private) }))
	refused("rename", as(otherUID, func() error { return os.Rename(private, filepath.Join(e.mnt, "moved")) }))
	refused("mkdir", as(otherUID, func() error { return os.Mkdir(filepath.Join(e.mnt, "d"), 0o755) }))
	if _, err := os.Stat(filepath.Join(e.submit, "private.txt")); err != nil {
		t.Errorf("the owner's file after the other user's attempts: %v", err)
	}
	for _, n := range []string{"planted", "moved", "d"} {
		if _, err := os.Lstat(filepath.Join(e.submit, n)); err == nil {
			t.Errorf("another user made %s in the job's directory", n)
		}
	}

	// Root (the starter: its syncs, checkpoints) is let in.
	if b, err := os.ReadFile(private); err != nil || string(b) != "the owner's\n" {
		t.Errorf("root's read: %q, %v", b, err)
	}
}

package asuser

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

func nobody(t *testing.T) Credential {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root: acts as another user (not in -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: acts as another user (CI runs as root)")
	}
	c, err := Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	return c
}

// The kernel checks the user's permissions, not root's, and root's are
// intact afterwards, on every thread.
func TestOpenFileAsTheUser(t *testing.T) {
	c := nobody(t)
	dir := t.TempDir()
	for d := dir; d != "/tmp" && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(c, secret, os.O_RDONLY, 0); !errors.Is(err, os.ErrPermission) {
		t.Errorf("nobody opened root's 0600 file: %v", err)
	}
	if _, err := OpenFile(c, filepath.Join(dir, "new"), os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, os.ErrPermission) {
		t.Errorf("nobody created a file in root's directory: %v", err)
	}

	// In a directory of the user's, a new file is the user's.
	own := filepath.Join(dir, "own")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, int(c.UID), int(c.GID)); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(c, filepath.Join(own, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("nobody creating a file in their directory: %v", err)
	}
	fi, _ := f.Stat()
	f.Close()
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != c.UID || st.Gid != c.GID {
		t.Errorf("new file belongs to %d:%d, want %d:%d", st.Uid, st.Gid, c.UID, c.GID)
	}

	// A link the user planted towards root's file is not followed.
	link := filepath.Join(own, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(c, link, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		t.Error("OpenFile followed a symbolic link")
	}

	// Root is root again everywhere, under concurrency.
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if _, err := OpenFile(c, secret, os.O_RDONLY, 0); err == nil {
				t.Error("nobody opened root's file")
			}
			f, err := os.Open(secret)
			if err != nil {
				t.Errorf("root lost access to its own file: %v", err)
				return
			}
			f.Close()
		})
	}
	wg.Wait()
}

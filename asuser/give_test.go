package asuser

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestGiveTree: everything in the tree becomes the user's, but what a
// link in it points to and the directory kept.
func TestGiveTree(t *testing.T) {
	c := nobody(t)
	outside := filepath.Join(t.TempDir(), "outside")
	dir := t.TempDir()
	for _, d := range []string{"a/b", "kept/inner"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{outside, filepath.Join(dir, "a/b/f"), filepath.Join(dir, "kept/inner/f")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "a/link")); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept")
	if err := GiveTree(dir, int(c.UID), int(c.GID), func(p string) bool { return p == kept }); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) uint32 {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	for _, p := range []string{".", "a", "a/b", "a/b/f", "a/link"} {
		if u := owner(filepath.Join(dir, p)); u != c.UID {
			t.Errorf("%s belongs to %d, want %d", p, u, c.UID)
		}
	}
	for _, p := range []string{outside, kept, filepath.Join(kept, "inner/f")} {
		if u := owner(p); u != 0 {
			t.Errorf("%s belongs to %d, want root still", p, u)
		}
	}
}

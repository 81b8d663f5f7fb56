package asuser

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// TestGiveTreeUnderARace: a process of the user's may work in the tree
// while root gives it (a transfer plugin's child that outlived it, say),
// swapping a directory for a link to one of the machine's and back as
// fast as it can. Nothing outside the tree changes owner.
func TestGiveTreeUnderARace(t *testing.T) {
	c := nobody(t)
	dir, outside := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, d := range []string{a, outside} {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(a, a+".real")
			_ = os.Symlink(outside, a)
			time.Sleep(20 * time.Microsecond)
			_ = os.Remove(a)
			_ = os.Rename(a+".real", a)
			time.Sleep(20 * time.Microsecond)
		}
	}()
	for range 500 {
		_ = GiveTree(dir, int(c.UID), int(c.GID), nil) // a race may fail it: what matters is below
	}
	close(stop)
	<-done
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(entries, nil) {
		p := outside
		if e != nil {
			p = filepath.Join(outside, e.Name())
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 0 {
			t.Fatalf("%s, outside the tree, was given to %d", p, st.Uid)
		}
	}
}

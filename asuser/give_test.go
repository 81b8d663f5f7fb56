package asuser

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// fast as it can. Nothing outside the tree changes owner. The racing
// process is this test binary run as the user (see TestMain).
func TestGiveTreeUnderARace(t *testing.T) {
	c := nobody(t)
	// Where the user reaches: not beneath t.TempDir's directories,
	// which are root's alone.
	top, err := os.MkdirTemp("", "give-race-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir, outside := filepath.Join(top, "tree"), filepath.Join(top, "outside")
	a := filepath.Join(dir, "a")
	for _, d := range []string{a, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		for _, d := range []string{a, outside} {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(top, "racer")
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, outside} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The tree is the user's before the race, as after a first start.
	if err := GiveTree(dir, int(c.UID), int(c.GID), nil); err != nil {
		t.Fatal(err)
	}
	racer := exec.Command(bin)
	racer.Env = append(os.Environ(), raceEnv+"="+a+"\n"+outside)
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.UID, Gid: c.GID}, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	racer.Stdout, racer.Stderr = &out, &out
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	for range 500 {
		_ = GiveTree(dir, int(c.UID), int(c.GID), nil) // a race may fail it: what matters is below
	}
	_ = racer.Process.Kill()
	_ = racer.Wait()
	if out.Len() > 0 {
		t.Fatalf("the racing process, as %d: %s", c.UID, out.String())
	}
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

// raceEnv, set to a directory and another outside the tree separated by
// a newline, has the test binary swap the first for a link to the second and
// back until it is killed (TestGiveTreeUnderARace).
const raceEnv = "ASUSER_TEST_RACE"

func TestMain(m *testing.M) {
	if v := os.Getenv(raceEnv); v != "" {
		a, outside, _ := strings.Cut(v, "\n")
		race(a, outside)
	}
	os.Exit(m.Run())
}

// race swaps the directory a for a link to outside and back, for ever.
// Its first rename failing means it cannot work in the tree at all.
func race(a, outside string) {
	for i := 0; ; i++ {
		if err := os.Rename(a, a+".real"); err != nil && i == 0 {
			fmt.Println(err)
			os.Exit(1)
		}
		_ = os.Symlink(outside, a)
		time.Sleep(20 * time.Microsecond)
		_ = os.Remove(a)
		_ = os.Rename(a+".real", a)
		time.Sleep(20 * time.Microsecond)
	}
}

package iofs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs an unmodified system program in the mounted job directory.
func (e *env) run(t testing.TB, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil && !strings.Contains(name, "/") {
		t.Skipf("%s not installed", name)
	}
	// The program changes into the mount itself: a Go process must not
	// fork with a working directory it serves through FUSE, since the
	// child's chdir, made before exec, would wait on a parent that cannot
	// stop the world while a thread is in vfork.
	cmd := exec.Command("sh", append([]string{"-c", `cd "$0" && exec "$@"`, e.mnt, name}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestSystemBinaries(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("words.txt", "pear\napple\nfig\napple\nbanana\n")
	e.writeSubmit("data/a.txt", "alpha\n")
	e.writeSubmit("data/sub/b.txt", "beta\n")

	t.Run("cat", func(t *testing.T) {
		if got := e.run(t, "cat", "words.txt"); got != "pear\napple\nfig\napple\nbanana\n" {
			t.Errorf("cat: %q", got)
		}
	})
	t.Run("sort", func(t *testing.T) {
		e.run(t, "sh", "-c", "sort words.txt > sorted.txt")
		if got := e.readSubmit("sorted.txt"); got != "apple\napple\nbanana\nfig\npear\n" {
			t.Errorf("sorted.txt on the submit side: %q", got)
		}
	})
	t.Run("wc", func(t *testing.T) {
		if got := strings.Fields(e.run(t, "wc", "-l", "words.txt")); got[0] != "5" {
			t.Errorf("wc -l: %v", got)
		}
	})
	t.Run("grep", func(t *testing.T) {
		if got := e.run(t, "grep", "-c", "apple", "words.txt"); got != "2\n" {
			t.Errorf("grep -c: %q", got)
		}
		if got := e.run(t, "grep", "-r", "beta", "data"); got != "data/sub/b.txt:beta\n" {
			t.Errorf("grep -r: %q", got)
		}
	})
	t.Run("tar", func(t *testing.T) {
		e.run(t, "tar", "cf", "data.tar", "data")
		e.run(t, "mkdir", "out")
		e.run(t, "tar", "xf", "data.tar", "--no-same-owner", "-C", "out")
		if got := e.readSubmit("out/data/sub/b.txt"); got != "beta\n" {
			t.Errorf("extracted b.txt on the submit side: %q", got)
		}
		list := e.run(t, "tar", "tf", filepath.Join(e.submit, "data.tar"))
		if !strings.Contains(list, "data/sub/b.txt") {
			t.Errorf("the archive written through iofs lists %q", list)
		}
	})
	t.Run("sqlite3", func(t *testing.T) {
		e.run(t, "sqlite3", "jobs.db", "create table t(x); insert into t values (1),(2),(3);")
		if got := e.run(t, "sqlite3", "jobs.db", "select sum(x) from t;"); got != "6\n" {
			t.Errorf("sqlite3 through iofs: %q", got)
		}
		if got := e.run(t, "sqlite3", filepath.Join(e.submit, "jobs.db"), "select count(*) from t;"); got != "3\n" {
			t.Errorf("sqlite3 on the submit side: %q", got)
		}
	})
	t.Run("python3", func(t *testing.T) {
		e.writeSubmit("prog.py", `
import mmap, os
with open("words.txt", "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    print(m[:4].decode(), len(m))
with open("py.out", "w") as f:
    f.write("x" * 100000)
os.rename("py.out", "py.txt")
print(os.path.getsize("py.txt"))
`)
		if got := e.run(t, "python3", "prog.py"); got != "pear 28\n100000\n" {
			t.Errorf("python3: %q", got)
		}
		if _, err := os.Stat(filepath.Join(e.submit, "py.txt")); err != nil {
			t.Error(err)
		}
	})
	t.Run("exec", func(t *testing.T) {
		// A program that lives only on the submit side runs from iofs.
		prog, err := os.ReadFile("/bin/echo")
		if err != nil {
			t.Skipf("needs /bin/echo to copy to the submit side: %v", err)
		}
		if err := os.WriteFile(filepath.Join(e.submit, "myecho"), prog, 0o755); err != nil {
			t.Fatal(err)
		}
		if got := e.run(t, "./myecho", "hello"); got != "hello\n" {
			t.Errorf("./myecho: %q", got)
		}
	})
	t.Run("ls", func(t *testing.T) {
		e.run(t, "ln", "-s", "words.txt", "link")
		if got := e.run(t, "readlink", "link"); got != "words.txt\n" {
			t.Errorf("readlink: %q", got)
		}
		e.run(t, "chmod", "600", "words.txt")
		st, err := os.Stat(filepath.Join(e.submit, "words.txt"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("chmod through iofs: %v %v", st.Mode(), err)
		}
		got := e.run(t, "ls", "data")
		if got != "a.txt\nsub\n" {
			t.Errorf("ls: %q", got)
		}
		e.run(t, "rm", "-r", "data")
		if _, err := os.Stat(filepath.Join(e.submit, "data")); !os.IsNotExist(err) {
			t.Errorf("rm -r through iofs left %v", err)
		}
	})
}

package iofs_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

func TestErrno(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("file", "x")
	e.writeSubmit("dir/inner", "y")
	checks := []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"open missing", open(e.path("missing"), os.O_RDONLY), syscall.ENOENT},
		{"create in missing dir", open(e.path("nodir/f"), os.O_CREATE|os.O_WRONLY), syscall.ENOENT},
		{"exclusive create of existing", open(e.path("file"), os.O_CREATE|os.O_EXCL|os.O_WRONLY), syscall.EEXIST},
		{"open dir for writing", open(e.path("dir"), os.O_WRONLY), syscall.EISDIR},
		{"file as directory", open(e.path("file/x"), os.O_RDONLY), syscall.ENOTDIR},
		{"mkdir existing", os.Mkdir(e.path("dir"), 0o755), syscall.EEXIST},
		{"rmdir non-empty", syscall.Rmdir(e.path("dir")), syscall.ENOTEMPTY},
		{"unlink directory", syscall.Unlink(e.path("dir")), syscall.EISDIR},
		{"rmdir file", syscall.Rmdir(e.path("file")), syscall.ENOTDIR},
		{"rename missing", os.Rename(e.path("missing"), e.path("other")), syscall.ENOENT},
		{"readlink of a file", readlink(e.path("file")), syscall.EINVAL},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.err, c.want)
		}
	}
}

func open(name string, flags int) error {
	f, err := os.OpenFile(name, flags, 0o644)
	if err == nil {
		f.Close()
	}
	return err
}

func readlink(name string) error {
	_, err := os.Readlink(name)
	return err
}

// TestEscapes asks the shadow, over the job's own mutual-TLS connection and
// with its secret, for names outside the job's directory, as a subverted
// execute machine could. (Through the mount the kernel resolves "..", and
// symbolic links on the execute side, so iofs never sees such names.)
func TestEscapes(t *testing.T) {
	e := newEnv(t, "")
	outside := t.TempDir()
	if err := os.WriteFile(outside+"/secret", []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(outside+"/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeSubmit("in/ok.txt", "ok")
	for name, target := range map[string]string{
		"in/abs":  outside + "/secret",
		"in/up":   "../../../../" + outside[1:] + "/secret",
		"in/dir":  outside + "/dir",
		"in/good": "ok.txt",
	} {
		if err := os.Symlink(target, e.submit+"/"+name); err != nil {
			t.Fatal(err)
		}
	}
	c := wire.NewShadowIOClient(e.conn)
	ctx := context.Background()

	for _, name := range []string{"..", "../job2/x", "in/../../x", outside + "/secret", "/etc/passwd"} {
		rep, err := c.Resolve(ctx, &wire.ResolveRequest{Secret: testSecret, Name: name})
		if err != nil || syscall.Errno(rep.Errno) != syscall.EACCES {
			t.Errorf("resolve %q: %v, %v; want EACCES", name, rep, err)
		}
	}
	for _, p := range []string{"/etc/passwd", outside + "/secret", e.submit + "/in/abs", e.submit + "/in/up",
		e.submit + "/in/dir/x", e.submit + "/in/../../x", e.submit + "/in/dir/../../x"} {
		rep, err := c.Open(ctx, &wire.OpenRequest{Secret: testSecret, Path: p, Flags: syscall.O_RDWR | syscall.O_CREAT, Mode: 0o644})
		if err != nil || rep.Errno == 0 {
			t.Errorf("open %s: %v, %v; want refused", p, rep, err)
		}
	}
	for _, p := range []string{e.submit + "/in/abs", e.submit + "/in/dir"} {
		rep, err := c.SetAttr(ctx, &wire.SetAttrRequest{Secret: testSecret, Path: p, SetMode: true, Mode: 0o777})
		if err != nil || rep.Errno == 0 {
			t.Errorf("chmod %s: %v, %v; want refused", p, rep, err)
		}
	}
	if rep, err := c.Mkdir(ctx, &wire.MkdirRequest{Secret: testSecret, Path: e.submit + "/in/dir/new", Mode: 0o755}); err != nil || rep.Errno == 0 {
		t.Errorf("mkdir through a link: %v, %v", rep, err)
	}
	if rep, err := c.Rename(ctx, &wire.RenameRequest{Secret: testSecret, OldPath: e.submit + "/in/ok.txt", NewPath: outside + "/stolen"}); err != nil || rep.Errno == 0 {
		t.Errorf("rename out of the job directory: %v, %v", rep, err)
	}
	if rep, err := c.Unlink(ctx, &wire.PathRequest{Secret: testSecret, Path: e.submit + "/in/dir/../secret"}); err != nil || rep.Errno == 0 {
		t.Errorf("unlink through a link: %v, %v", rep, err)
	}
	if st, err := os.Stat(outside + "/secret"); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the outside file changed: %v %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(outside + "/dir"); len(ents) != 0 {
		t.Errorf("something was made outside: %v", ents)
	}
	// A link that stays inside is followed.
	rep, err := c.Open(ctx, &wire.OpenRequest{Secret: testSecret, Path: e.submit + "/in/good", Prefetch: 10})
	if err != nil || rep.Errno != 0 || string(rep.Data) != "ok" {
		t.Errorf("open of a link inside: %v, %v", rep, err)
	}
	// Without the job's secret nothing is answered.
	if _, err := c.Stat(ctx, &wire.PathRequest{Secret: "wrong", Path: e.submit}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("stat with a wrong secret: %v", err)
	}
}

// TestOutage stops the shadow's I/O server and starts a new one (which has
// forgotten every open file) on the same address while the job reads.
func TestOutage(t *testing.T) {
	e := newEnv(t, "")
	want := make([]byte, 3<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(e.submit+"/big", want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(e.path("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, first); err != nil {
		t.Fatal(err)
	}

	e.grpc.Stop()
	done := make(chan error, 1)
	var rest []byte
	go func() {
		var err error
		rest, err = io.ReadAll(f)
		if err == nil {
			err = os.WriteFile(e.path("written-during-outage"), []byte("still here"), 0o644)
		}
		done <- err
	}()
	lis, err := net.Listen("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	e.io = shadow.NewIOServer(e.mapping, testSecret)
	e.serve(lis)
	if err := <-done; err != nil {
		t.Fatalf("I/O across the outage: %v", err)
	}
	if got := append(first, rest...); string(got) != string(want) {
		t.Errorf("read %d bytes across the outage, want %d identical", len(got), len(want))
	}
	if got := e.readSubmit("written-during-outage"); got != "still here" {
		t.Errorf("written during the outage: %q", got)
	}
	// The new server never saw the open: iofs opened the file again by name.
	reopened := false
	for _, s := range e.io.Stats() {
		if strings.HasSuffix(s.Path, "/big") && s.Opens >= 1 && s.BytesRead > 0 {
			reopened = true
		}
	}
	if !reopened {
		t.Errorf("no reopen of big at the new server: %+v", e.io.Stats())
	}
}

// TestUnlinkedOpen works on a file after its name is gone, as programs with
// temporary files do and as a restored checkpoint does, which opens its
// files again through /proc/self/fd.
func TestUnlinkedOpen(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("tmp", strings.Repeat("t", 200000))
	f, err := os.OpenFile(e.path("tmp"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(e.path("tmp")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new"), 0); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 200000 {
		t.Errorf("fstat after unlink: %v, %v", st, err)
	}
	g, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatalf("open through /proc/self/fd after unlink: %v", err)
	}
	defer g.Close()
	buf := make([]byte, 5)
	if _, err := g.ReadAt(buf, 0); err != nil || string(buf) != "newtt" {
		t.Errorf("read through the second descriptor: %q, %v", buf, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		t.Errorf("statfs of an unlinked file: %v", err)
	}
}

// TestSameFileSameInode looks a file up again once the kernel's entry has
// expired while the file is held open: the name leads to the inode held
// open (CRIU checks exactly that when it checkpoints a job). A file
// replaced on the submit side is another inode.
func TestSameFileSameInode(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("in.txt", "one\ntwo\n")
	f, err := os.Open(e.path("in.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ino := func(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
	held, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the entry timeout (1 s)
	byName, err := os.Stat(e.path("in.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if ino(byName) != ino(held) {
		t.Errorf("in.txt is inode %d by name, %d held open", ino(byName), ino(held))
	}

	// Replaced on the submit side (a new file renamed over it).
	tmp := filepath.Join(e.submit, "in.new")
	if err := os.WriteFile(tmp, []byte("three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(e.submit, "in.txt")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	replaced, err := os.Stat(e.path("in.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if ino(replaced) == ino(held) {
		t.Errorf("the replaced in.txt kept inode %d", ino(held))
	}
}

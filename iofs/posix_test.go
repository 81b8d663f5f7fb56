package iofs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func lstat(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestHardLink makes hard links through iofs: the submit side gets a
// second name for the same file, and the job sees one file under both.
func TestHardLink(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("a", "one")
	if err := os.Link(e.path("a"), e.path("b")); err != nil {
		t.Fatalf("link: %v", err)
	}
	sa, sb := lstat(t, filepath.Join(e.submit, "a")), lstat(t, filepath.Join(e.submit, "b"))
	if sa.Ino != sb.Ino || sa.Nlink != 2 {
		t.Errorf("submit side: a is inode %d, b %d, %d links; want one inode, 2 links", sa.Ino, sb.Ino, sa.Nlink)
	}
	ma, mb := lstat(t, e.path("a")), lstat(t, e.path("b"))
	if ma.Ino != mb.Ino || mb.Nlink != 2 {
		t.Errorf("through iofs: a is inode %d, b %d, %d links", ma.Ino, mb.Ino, mb.Nlink)
	}
	if err := os.WriteFile(e.path("b"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(e.path("a")); err != nil || string(got) != "two" {
		t.Errorf("written through b, a reads %q, %v", got, err)
	}
	if err := os.Remove(e.path("a")); err != nil {
		t.Fatal(err)
	}
	if got := e.readSubmit("b"); got != "two" {
		t.Errorf("b after a was unlinked: %q", got)
	}
	e.run(t, "ln", "b", "c") // the program users found failing
	if got := e.readSubmit("c"); got != "two" {
		t.Errorf("ln b c: c holds %q", got)
	}
	if err := os.Mkdir(e.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		err  error
		want syscall.Errno
	}{
		"link to an existing name": {os.Link(e.path("b"), e.path("c")), syscall.EEXIST},
		"link of a directory":      {os.Link(e.path("dir"), e.path("dir2")), syscall.EPERM},
		"link of a missing file":   {os.Link(e.path("missing"), e.path("d")), syscall.ENOENT},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", what, c.err, c.want)
		}
	}
}

// TestHardLinkNamesLookedUpApart: the names of a hard link made on the
// submit side (or looked up again after a restore), each looked up on
// its own, are one file to the job: one inode number, and what the job
// writes through one name it reads through the other at once, though
// the kernel still holds the write in its pages.
func TestHardLinkNamesLookedUpApart(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("x", "old contents\n")
	if err := os.Link(filepath.Join(e.submit, "x"), filepath.Join(e.submit, "y")); err != nil {
		t.Fatal(err)
	}
	e.writeSubmit("z", "another file\n") // same size, another inode
	w, err := os.OpenFile(e.path("y"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("NEW"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(e.path("x")); err != nil || string(got) != "NEW contents\n" {
		t.Errorf("written through y, x reads %q, %v", got, err)
	}
	mx, my, mz := lstat(t, e.path("x")), lstat(t, e.path("y")), lstat(t, e.path("z"))
	if mx.Ino != my.Ino || mx.Nlink != 2 || mz.Ino == mx.Ino {
		t.Errorf("x is inode %d with %d links, y %d, z %d: want x and y one inode of 2 links, z another", mx.Ino, mx.Nlink, my.Ino, mz.Ino)
	}
}

// TestSymlinkOwnTimes sets a symbolic link's own times, as tar, cp -a and
// rsync -a do: the link changes, its target does not.
func TestSymlinkOwnTimes(t *testing.T) {
	e := newEnv(t, "")
	target := e.writeSubmit("target", "t")
	if err := os.Chtimes(target, fileTime, fileTime); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", e.path("link")); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2020, 5, 6, 7, 8, 9, 123456789, time.UTC)
	ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, e.path("link"), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("utimensat(AT_SYMLINK_NOFOLLOW): %v", err)
	}
	if st := lstat(t, filepath.Join(e.submit, "link")); st.Mtim.Nano() != when.UnixNano() {
		t.Errorf("submit side: the link's mtime is %v, want %v", time.Unix(0, st.Mtim.Nano()).UTC(), when)
	}
	if st := lstat(t, target); st.Mtim.Nano() != fileTime.UnixNano() {
		t.Errorf("submit side: the target's mtime changed to %v", time.Unix(0, st.Mtim.Nano()).UTC())
	}
	if st := lstat(t, e.path("link")); st.Mtim.Nano() != when.UnixNano() {
		t.Errorf("through iofs: the link's mtime is %v", time.Unix(0, st.Mtim.Nano()).UTC())
	}
	// touch -h, and following the link still sets the target.
	e.run(t, "touch", "-h", "-d", "2021-01-01 00:00:00Z", "link")
	if st := lstat(t, filepath.Join(e.submit, "link")); time.Unix(0, st.Mtim.Nano()).UTC().Year() != 2021 {
		t.Errorf("touch -h: the link's mtime is %v", time.Unix(0, st.Mtim.Nano()).UTC())
	}
	if err := os.Chtimes(e.path("link"), when, when); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, target); st.Mtim.Nano() != when.UnixNano() {
		t.Errorf("utimes through the link: the target's mtime is %v", time.Unix(0, st.Mtim.Nano()).UTC())
	}
	// A link has no mode of its own to change.
	if err := unix.Fchmodat(unix.AT_FDCWD, e.path("link"), 0o600, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		t.Error("chmod of a link itself succeeded")
	}
}

// TestXattrs uses user.* extended attributes through iofs: they are the
// submit side's, with its semantics.
func TestXattrs(t *testing.T) {
	e := newEnv(t, "")
	submitFile := e.writeSubmit("f", "x")
	p := e.path("f")
	if err := unix.Setxattr(p, "user.color", []byte("blue"), 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(submitFile, "user.color", buf); err != nil || string(buf[:n]) != "blue" {
		t.Errorf("submit side has user.color = %q, %v", buf[:n], err)
	}
	if err := unix.Setxattr(submitFile, "user.size", []byte("L"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Getxattr(p, "user.size", buf); err != nil || string(buf[:n]) != "L" {
		t.Errorf("getxattr of one set on the submit side: %q, %v", buf[:n], err)
	}
	if n, err := unix.Getxattr(p, "user.color", nil); err != nil || n != 4 {
		t.Errorf("size of user.color: %d, %v", n, err)
	}
	if _, err := unix.Getxattr(p, "user.color", buf[:2]); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("getxattr into a short buffer: %v, want ERANGE", err)
	}
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
	if len(names) != 2 || !bytes.Contains(buf[:n], []byte("user.color\x00")) || !bytes.Contains(buf[:n], []byte("user.size\x00")) {
		t.Errorf("listxattr: %q", names)
	}
	if err := unix.Removexattr(p, "user.color"); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		err  error
		want syscall.Errno
	}{
		"get a removed attribute":       {getErr(p, "user.color"), syscall.ENODATA},
		"remove a missing attribute":    {unix.Removexattr(p, "user.color"), syscall.ENODATA},
		"create an existing attribute":  {unix.Setxattr(p, "user.size", []byte("M"), unix.XATTR_CREATE), syscall.EEXIST},
		"replace a missing attribute":   {unix.Setxattr(p, "user.none", []byte("M"), unix.XATTR_REPLACE), syscall.ENODATA},
		"set outside the user space":    {unix.Setxattr(p, "trusted.x", []byte("1"), 0), syscall.EOPNOTSUPP},
		"get outside the user space":    {getErr(p, "security.selinux"), syscall.ENODATA},
		"set user.* on a symbolic link": {lsetxattr(t, e), syscall.EPERM},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", what, c.err, c.want)
		}
	}
	if err := os.Mkdir(e.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(e.path("d"), "user.dir", []byte("yes"), 0); err != nil {
		t.Errorf("setxattr on a directory: %v", err)
	}
}

func getErr(p, name string) error {
	_, err := unix.Getxattr(p, name, make([]byte, 64))
	return err
}

func lsetxattr(t *testing.T, e *env) error {
	if err := os.Symlink("f", e.path("l")); err != nil {
		t.Fatal(err)
	}
	return unix.Lsetxattr(e.path("l"), "user.x", []byte("1"), 0)
}

// TestMkfifo makes a FIFO through iofs: its name is on the submit side,
// and the job's processes talk through it on the execute machine.
func TestMkfifo(t *testing.T) {
	e := newEnv(t, "")
	if got := e.run(t, "sh", "-c", `mkfifo pipe && { echo through the fifo > pipe & } && cat pipe && wait`); got != "through the fifo\n" {
		t.Errorf("read from the fifo: %q", got)
	}
	if st := lstat(t, filepath.Join(e.submit, "pipe")); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("submit side: pipe has mode %o, want a FIFO", st.Mode)
	}
	if err := unix.Mknod(e.path("dev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mknod of a device: %v, want EPERM", err)
	}
}

// TestStatsCountOnlyTheJob looks small files up without opening them, as
// ls -l and a path walk do, and opens another: the shadow's statistics
// show the one open, and no reads of the files only looked at.
func TestStatsCountOnlyTheJob(t *testing.T) {
	e := newEnv(t, "")
	e.writeSubmit("job.sub", "executable = x\n")
	e.writeSubmit("in.txt", "input\n")
	e.run(t, "ls", "-l", "job.sub", "in.txt")
	if _, err := os.Stat(e.path("job.sub")); err != nil {
		t.Fatal(err)
	}
	if got := e.run(t, "cat", "in.txt"); got != "input\n" {
		t.Fatalf("cat: %q", got)
	}
	// The open of in.txt was served from its lookup; iofs reports it in
	// the background.
	var in, sub *struct{ opens, reads, bytes int64 }
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		in, sub = nil, nil
		for _, s := range e.io.Stats() {
			c := &struct{ opens, reads, bytes int64 }{s.Opens, s.Reads, s.BytesRead}
			switch filepath.Base(s.Path) {
			case "in.txt":
				in = c
			case "job.sub":
				sub = c
			}
		}
		if in != nil {
			break
		}
	}
	if sub != nil {
		t.Errorf("job.sub, only looked at: %+v, want no statistics", *sub)
	}
	if in == nil || in.opens != 1 || in.reads != 1 || in.bytes != 6 {
		t.Errorf("in.txt, opened and read once: %+v, want 1 open, 1 read of 6 bytes", in)
	}
}

// TestPageCacheKeptWhileUnchanged reads a file twice: the second time the
// kernel's page cache serves it, since the shadow says the file has not
// changed. Once it has, the job reads the new contents.
func TestPageCacheKeptWhileUnchanged(t *testing.T) {
	e := newEnv(t, "")
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	e.writeSubmit("f", string(data))
	bytesRead := func() int64 {
		for _, s := range e.io.Stats() {
			if filepath.Base(s.Path) == "f" {
				return s.BytesRead
			}
		}
		return 0
	}
	for i, want := range []int64{int64(len(data)), 0} {
		before := bytesRead()
		got, err := os.ReadFile(e.path("f"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d: %d bytes, %v", i, len(got), err)
		}
		// The open brings the first 64 KiB along in any case.
		if n := bytesRead() - before; (want == 0) != (n <= 64<<10) {
			t.Errorf("read %d of an unchanged file: the shadow sent %d bytes", i, n)
		}
	}
	changed := bytes.ToUpper(data)
	e.writeSubmit("f", string(changed))
	e.waitFor(t, "f", string(changed))
	// Grown on the submit side: the kernel, which keeps the size it knows
	// of files it caches, learns the new one.
	grown := string(changed) + "and more"
	e.writeSubmit("f", grown)
	e.waitFor(t, "f", grown)
}

// TestMtimeTravelsWithWrites: the modification time the kernel keeps for
// a file whose writes it caches reaches the submit side by the file's
// fsync, with its writes, after them: a time set on the file stays set
// until the job writes again, and then becomes the kernel's.
func TestMtimeTravelsWithWrites(t *testing.T) {
	e := newEnv(t, "")
	f, err := os.OpenFile(e.path("db"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 3 {
		if _, err := f.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 4096), int64(i)*4096); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync %d: %v", i, err)
		}
		if sub := lstat(t, filepath.Join(e.submit, "db")); sub.Size != int64(i+1)*4096 {
			t.Errorf("after fsync %d: submit side size %d", i, sub.Size)
		}
	}
	when := time.Date(2020, 2, 2, 2, 2, 2, 2, time.UTC)
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(when.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, e.path("db"), ts, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if sub := lstat(t, filepath.Join(e.submit, "db")); sub.Mtim.Nano() != when.UnixNano() {
		t.Errorf("submit side mtime %v, want the one set, %v", time.Unix(0, sub.Mtim.Nano()).UTC(), when)
	}
	if _, err := f.WriteAt([]byte("z"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mnt, sub := lstat(t, e.path("db")), lstat(t, filepath.Join(e.submit, "db"))
	if time.Unix(0, sub.Mtim.Nano()).Year() == 2020 || sub.Mtim != mnt.Mtim {
		t.Errorf("after a write and fsync: submit side mtime %v, the job sees %v",
			time.Unix(0, sub.Mtim.Nano()).UTC(), time.Unix(0, mnt.Mtim.Nano()).UTC())
	}
	if got := e.readSubmit("db"); len(got) != 3*4096 || got[0] != 'z' || got[4096] != 'b' || got[8192] != 'c' {
		t.Errorf("the submit side holds %d bytes, not the writes", len(got))
	}
}

// TestRemovedDirectoryStat: a directory the job removed while it holds it
// open (its working directory, as a program that cleans up after itself
// may leave it) still answers fstat, with no links, as on a local disk:
// CRIU checkpoints such a working directory only so.
func TestRemovedDirectoryStat(t *testing.T) {
	e := newEnv(t, "")
	if err := os.Mkdir(e.path("wd"), 0o750); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(e.path("wd"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Remove(e.path("wd")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		t.Fatalf("fstat of the removed directory: %v", err)
	}
	if st.Nlink != 0 || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o7777 != 0o750 {
		t.Errorf("fstat of the removed directory: mode %o, %d links; want a directory of mode 750, no links", st.Mode, st.Nlink)
	}
}

// TestSeekDataOfWrittenFile: SEEK_DATA and SEEK_HOLE find what the job
// wrote, though the kernel holds it in its pages and the submit side's
// file is still empty, and in a file the job removed, as CRIU seeks
// through one it saves.
func TestSeekDataOfWrittenFile(t *testing.T) {
	e := newEnv(t, "")
	f, err := os.OpenFile(e.path("w.dat"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 3 << 20
	if _, err := f.Write(bytes.Repeat([]byte("x"), size)); err != nil {
		t.Fatal(err)
	}
	for _, removed := range []bool{false, true} {
		if removed {
			if err := os.Remove(e.path("w.dat")); err != nil {
				t.Fatal(err)
			}
		}
		// Another descriptor, as CRIU opens /proc/PID/fd/N.
		g, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		data, derr := unix.Seek(int(g.Fd()), 0, unix.SEEK_DATA)
		hole, herr := unix.Seek(int(g.Fd()), 0, unix.SEEK_HOLE)
		g.Close()
		if derr != nil || herr != nil || data != 0 || hole != size {
			t.Errorf("removed %v: SEEK_DATA %d, %v; SEEK_HOLE %d, %v; want 0 and %d", removed, data, derr, hole, herr, size)
		}
	}
}

// TestFUSEDescriptorNotInherited: the mount's /dev/fuse descriptor is
// close-on-exec, so that no process the starter runs holds the
// connection (go-fuse's direct mount leaves it inheritable).
func TestFUSEDescriptorNotInherited(t *testing.T) {
	e := newEnv(t, "")
	out, err := exec.Command("sh", "-c", "ls -l /proc/self/fd").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "/dev/fuse") {
		t.Errorf("a child of the process that mounted %s holds /dev/fuse:\n%s", e.mnt, out)
	}
}

package iofs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The POSIX suite checks the file-system calls a job makes against what
// POSIX (and Linux, where POSIX leaves a choice) says they do, covering
// the ground of pjdfstest: chmod, chown, link, mkdir, mkfifo, open,
// rename, rmdir, symlink, truncate, unlink, utimensat, ftruncate,
// posix_fallocate and extended attributes. Each check runs against the
// submit machine's own file system and then through iofs; both pass
// counts are reported.
//
// Not covered, because they do not apply to iofs:
//
//   - Permission checks between users (pjdfstest's runs as other uids):
//     every access a job makes reaches the submit machine as its owner's
//     (the shadow runs as the owner), whatever user the job runs as on
//     the execute machine, as in Condor's remote I/O. The submit side's
//     own checks for the owner are kept, and they are what the suite sees.
//   - Device special files: mknod of a block or character device is
//     refused (EPERM), by design (TestMkfifo checks it).
//   - chown to other users: the suite runs as root on both sides, so it
//     may; a shadow that is not root is refused by the submit machine, as
//     its owner would be.
var posixSuite = []struct {
	name  string
	check func(c *posixChecker)
}{
	{"chmod", checkChmod},
	{"chown", checkChown},
	{"link", checkLink},
	{"mkdir", checkMkdir},
	{"mkfifo", checkMkfifo},
	{"open", checkOpen},
	{"rename", checkRename},
	{"rmdir", checkRmdir},
	{"symlink", checkSymlink},
	{"truncate", checkTruncate},
	{"ftruncate", checkFtruncate},
	{"unlink", checkUnlink},
	{"utimensat", checkUtimensat},
	{"posix_fallocate", checkFallocate},
	{"xattr", checkXattr},
}

// posixChecker runs the checks of one call in a fresh directory and
// records each check's outcome.
type posixChecker struct {
	t      *testing.T
	dir    string
	passed int
	failed []posixFailure
	group  string
}

// posixFailure is a failed check: which (call and check), and how.
type posixFailure struct{ check, detail string }

func (c *posixChecker) fail(what string, detail ...any) {
	c.failed = append(c.failed, posixFailure{c.group + ": " + what, fmt.Sprint(detail...)})
}

func (c *posixChecker) p(name string) string { return filepath.Join(c.dir, name) }

func (c *posixChecker) ok(what string, good bool, detail ...any) {
	if good {
		c.passed++
		return
	}
	c.fail(what, detail...)
}

// errIs checks that err is want (0 for success).
func (c *posixChecker) errIs(what string, err error, want syscall.Errno) {
	if want == 0 {
		c.ok(what, err == nil, err)
		return
	}
	c.ok(what, errors.Is(err, want), fmt.Sprintf("got %v, want %v", err, want))
}

// must sets up a check; a failure of the setup fails the check it serves.
func (c *posixChecker) must(err error) bool {
	if err != nil {
		c.fail("setup", err)
		return false
	}
	return true
}

func (c *posixChecker) create(name string, data string) string {
	p := c.p(name)
	c.must(os.WriteFile(p, []byte(data), 0o644))
	return p
}

func (c *posixChecker) lstat(p string) unix.Stat_t {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		c.fail("lstat "+filepath.Base(p), err)
	}
	return st
}

// tick waits until the file system's clock has surely moved on, so that a
// time a call must update differs from the one before (ext4's clock ticks
// every few milliseconds).
func tick() { time.Sleep(20 * time.Millisecond) }

// past sets a file's times an hour back, so that a call that must update
// them visibly does.
func (c *posixChecker) past(p string) {
	t := time.Now().Add(-time.Hour)
	c.must(unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW))
}

func (c *posixChecker) changed(what string, p string, do func() error, mtime, ctime bool) {
	c.past(p)
	before := c.lstat(p)
	tick()
	if !c.must(do()) {
		return
	}
	after := c.lstat(p)
	if mtime {
		c.ok(what+" updates mtime", after.Mtim.Nano() > before.Mtim.Nano(), before.Mtim, " -> ", after.Mtim)
	}
	if ctime {
		c.ok(what+" updates ctime", after.Ctim.Nano() > before.Ctim.Nano(), before.Ctim, " -> ", after.Ctim)
	}
}

// runPOSIXSuite runs every check beneath dir and returns the number
// passed and the failures.
func runPOSIXSuite(t *testing.T, dir string) (int, []posixFailure) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	passed, failed := 0, []posixFailure{}
	for _, g := range posixSuite {
		d := filepath.Join(dir, g.name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		c := &posixChecker{t: t, dir: d, group: g.name}
		g.check(c)
		passed += c.passed
		failed = append(failed, c.failed...)
	}
	return passed, failed
}

// TestPOSIXSuite runs the suite on the submit machine's file system and
// through iofs. Every check that passes natively must pass through iofs.
func TestPOSIXSuite(t *testing.T) {
	e := newEnv(t, "")
	nativeDir := filepath.Join(filepath.Dir(e.submit), "native")
	if err := os.Mkdir(nativeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	nPass, nFail := runPOSIXSuite(t, nativeDir)
	iPass, iFail := runPOSIXSuite(t, e.mnt)
	t.Logf("POSIX suite: submit machine's own file system (%s): %d passed, %d failed", fsName(nativeDir), nPass, len(nFail))
	t.Logf("POSIX suite: iofs over it: %d passed, %d failed", iPass, len(iFail))
	t.Log("POSIX suite: not applicable to iofs, so not run: checks as users other than the file's owner " +
		"(the job's every access reaches the submit side as its owner's), device files (refused by design), " +
		"chown to other users by a shadow that is not root (refused there, as for the owner)")
	// tmpfs, the other file system a submit directory often is.
	tmpfs := t.TempDir()
	if err := unix.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=64m"); err != nil {
		t.Logf("POSIX suite: no tmpfs to compare with: %v", err)
	} else {
		tPass, tFail := runPOSIXSuite(t, tmpfs)
		unix.Unmount(tmpfs, 0)
		t.Logf("POSIX suite: tmpfs: %d passed, %d failed", tPass, len(tFail))
		for _, f := range tFail {
			t.Logf("fails on tmpfs: %s: %s", f.check, f.detail)
		}
	}
	native := map[string]bool{}
	for _, f := range nFail {
		native[f.check] = true
		t.Logf("fails on the submit machine's own file system too: %s: %s", f.check, f.detail)
	}
	for _, f := range iFail {
		if !native[f.check] {
			t.Errorf("iofs fails what the submit machine passes: %s: %s", f.check, f.detail)
		}
	}
}

func checkChmod(c *posixChecker) {
	f := c.create("f", "x")
	c.errIs("chmod a file", os.Chmod(f, 0o640), 0)
	st := c.lstat(f)
	c.ok("mode is set", st.Mode&0o7777 == 0o640, fmt.Sprintf("%o", st.Mode))
	c.changed("chmod", f, func() error { return os.Chmod(f, 0o600) }, false, true)
	c.errIs("chmod with setuid, setgid and sticky bits", unix.Chmod(f, 0o7755), 0)
	st = c.lstat(f)
	c.ok("special bits are set", st.Mode&0o7777 == 0o7755, fmt.Sprintf("%o", st.Mode))
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.errIs("chmod a directory", os.Chmod(c.p("d"), 0o700), 0)
	st = c.lstat(c.p("d"))
	c.ok("directory mode is set", st.Mode&0o7777 == 0o700 && st.Mode&unix.S_IFMT == unix.S_IFDIR, fmt.Sprintf("%o", st.Mode))
	c.must(os.Symlink("f", c.p("l")))
	c.errIs("chmod through a symbolic link", os.Chmod(c.p("l"), 0o644), 0)
	st = c.lstat(f)
	c.ok("the link's target changes", st.Mode&0o7777 == 0o644, fmt.Sprintf("%o", st.Mode))
	c.errIs("chmod a missing file", os.Chmod(c.p("missing"), 0o644), syscall.ENOENT)
	c.errIs("chmod beneath a file", os.Chmod(c.p("f/x"), 0o644), syscall.ENOTDIR)
	c.errIs("fchmodat(AT_SYMLINK_NOFOLLOW) of a link", unix.Fchmodat(unix.AT_FDCWD, c.p("l"), 0o600, unix.AT_SYMLINK_NOFOLLOW), syscall.EOPNOTSUPP)
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	if c.must(err) {
		c.errIs("fchmod an open file", unix.Fchmod(fd, 0o444), 0)
		unix.Close(fd)
		st = c.lstat(f)
		c.ok("fchmod sets the mode", st.Mode&0o7777 == 0o444, fmt.Sprintf("%o", st.Mode))
	}
}

func checkChown(c *posixChecker) {
	f := c.create("f", "x")
	c.errIs("chown to another user and group", os.Chown(f, 65534, 65533), 0)
	st := c.lstat(f)
	c.ok("owner and group are set", st.Uid == 65534 && st.Gid == 65533, st.Uid, ":", st.Gid)
	c.errIs("chown -1:-1 changes nothing", os.Chown(f, -1, -1), 0)
	st = c.lstat(f)
	c.ok("owner and group unchanged", st.Uid == 65534 && st.Gid == 65533, st.Uid, ":", st.Gid)
	c.errIs("chown the group only", os.Chown(f, -1, 0), 0)
	st = c.lstat(f)
	c.ok("group set, owner kept", st.Uid == 65534 && st.Gid == 0, st.Uid, ":", st.Gid)
	c.changed("chown", f, func() error { return os.Chown(f, 0, 0) }, false, true)
	c.must(unix.Chmod(f, 0o6755))
	c.errIs("chown a setuid file", os.Chown(f, 65534, -1), 0)
	st = c.lstat(f)
	c.ok("chown clears setuid", st.Mode&unix.S_ISUID == 0, fmt.Sprintf("%o", st.Mode))
	c.must(os.Symlink("f", c.p("l")))
	c.errIs("lchown a symbolic link", os.Lchown(c.p("l"), 65533, 65533), 0)
	st, lt := c.lstat(f), c.lstat(c.p("l"))
	c.ok("the link changes, not its target", lt.Uid == 65533 && st.Uid == 65534, lt.Uid, " ", st.Uid)
	c.errIs("chown through a symbolic link", os.Chown(c.p("l"), 65532, -1), 0)
	st = c.lstat(f)
	c.ok("the target changes", st.Uid == 65532, st.Uid)
	c.errIs("chown a missing file", os.Chown(c.p("missing"), 0, 0), syscall.ENOENT)
}

func checkLink(c *posixChecker) {
	f := c.create("f", "data")
	c.past(c.dir)
	before := c.lstat(f)
	tick()
	c.errIs("link a file", os.Link(f, c.p("g")), 0)
	st, gt := c.lstat(f), c.lstat(c.p("g"))
	c.ok("both names are one inode", st.Ino == gt.Ino, st.Ino, " ", gt.Ino)
	c.ok("the link count is 2", st.Nlink == 2 && gt.Nlink == 2, st.Nlink)
	c.ok("link updates the file's ctime", st.Ctim.Nano() > before.Ctim.Nano())
	d := c.lstat(c.dir)
	c.ok("link updates the directory's mtime", d.Mtim.Sec > time.Now().Add(-time.Minute).Unix())
	data, err := os.ReadFile(c.p("g"))
	c.ok("the new name reads the file", err == nil && string(data) == "data", err)
	c.errIs("link to an existing name", os.Link(f, c.p("g")), syscall.EEXIST)
	c.errIs("link of a missing file", os.Link(c.p("missing"), c.p("h")), syscall.ENOENT)
	c.errIs("link into a missing directory", os.Link(f, c.p("nodir/h")), syscall.ENOENT)
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.errIs("link of a directory", os.Link(c.p("d"), c.p("d2")), syscall.EPERM)
	c.errIs("unlink the first name", os.Remove(f), 0)
	gt = c.lstat(c.p("g"))
	c.ok("the other name stays, with one link", gt.Nlink == 1, gt.Nlink)
	c.must(os.Symlink("g", c.p("l")))
	c.errIs("link a symbolic link", os.Link(c.p("l"), c.p("l2")), 0)
	lt := c.lstat(c.p("l2"))
	c.ok("the link itself is linked", lt.Mode&unix.S_IFMT == unix.S_IFLNK, fmt.Sprintf("%o", lt.Mode))
}

func checkMkdir(c *posixChecker) {
	c.past(c.dir)
	before := c.lstat(c.dir)
	tick()
	c.errIs("mkdir", unix.Mkdir(c.p("d"), 0o751), 0)
	st := c.lstat(c.p("d"))
	c.ok("a directory with the mode less the umask", st.Mode == unix.S_IFDIR|0o751&^0o022, fmt.Sprintf("%o", st.Mode))
	c.ok("a new directory has 2 links", st.Nlink == 2, st.Nlink)
	after := c.lstat(c.dir)
	c.ok("mkdir updates the parent's mtime and ctime", after.Mtim.Nano() > before.Mtim.Nano() && after.Ctim.Nano() > before.Ctim.Nano())
	c.ok("the parent gains a link", after.Nlink == before.Nlink+1, before.Nlink, " -> ", after.Nlink)
	c.errIs("mkdir an existing name", unix.Mkdir(c.p("d"), 0o755), syscall.EEXIST)
	c.create("f", "")
	c.errIs("mkdir over a file", unix.Mkdir(c.p("f"), 0o755), syscall.EEXIST)
	c.errIs("mkdir beneath a file", unix.Mkdir(c.p("f/d"), 0o755), syscall.ENOTDIR)
	c.errIs("mkdir in a missing directory", unix.Mkdir(c.p("no/d"), 0o755), syscall.ENOENT)
	c.errIs("mkdir with the sticky bit", unix.Mkdir(c.p("s"), 0o1777), 0)
	st = c.lstat(c.p("s"))
	c.ok("the sticky bit is kept", st.Mode&0o7777 == 0o1755, fmt.Sprintf("%o", st.Mode))
}

func checkMkfifo(c *posixChecker) {
	c.errIs("mkfifo", unix.Mkfifo(c.p("p"), 0o640), 0)
	st := c.lstat(c.p("p"))
	c.ok("a FIFO with the mode given", st.Mode == unix.S_IFIFO|0o640, fmt.Sprintf("%o", st.Mode))
	c.errIs("mkfifo an existing name", unix.Mkfifo(c.p("p"), 0o644), syscall.EEXIST)
	c.errIs("mkfifo in a missing directory", unix.Mkfifo(c.p("no/p"), 0o644), syscall.ENOENT)
	// Data passes through the FIFO (opened non-blocking, so one process
	// suffices).
	r, err := unix.Open(c.p("p"), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if !c.must(err) {
		return
	}
	defer unix.Close(r)
	w, err := unix.Open(c.p("p"), unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if !c.must(err) {
		return
	}
	defer unix.Close(w)
	unix.Write(w, []byte("ping"))
	buf := make([]byte, 8)
	n, err := unix.Read(r, buf)
	c.ok("data passes through the FIFO", err == nil && string(buf[:n]) == "ping", err)
	c.errIs("mknod of a socket", unix.Mknod(c.p("sock"), unix.S_IFSOCK|0o600, 0), 0)
	st = c.lstat(c.p("sock"))
	c.ok("a socket", st.Mode&unix.S_IFMT == unix.S_IFSOCK, fmt.Sprintf("%o", st.Mode))
}

func checkOpen(c *posixChecker) {
	fd, err := unix.Open(c.p("new"), unix.O_CREAT|unix.O_WRONLY, 0o640)
	c.errIs("open O_CREAT", err, 0)
	if err == nil {
		unix.Close(fd)
	}
	st := c.lstat(c.p("new"))
	c.ok("a regular file with the mode given", st.Mode == unix.S_IFREG|0o640 && st.Size == 0, fmt.Sprintf("%o", st.Mode))
	_, err = unix.Open(c.p("new"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	c.errIs("O_CREAT|O_EXCL of an existing file", err, syscall.EEXIST)
	f := c.create("f", "0123456789")
	c.changed("O_TRUNC", f, func() error {
		fd, err := unix.Open(f, unix.O_WRONLY|unix.O_TRUNC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}, true, true)
	st = c.lstat(f)
	c.ok("O_TRUNC empties the file", st.Size == 0, st.Size)
	c.must(os.WriteFile(f, []byte("start"), 0o644))
	fd, err = unix.Open(f, unix.O_WRONLY|unix.O_APPEND, 0)
	if c.must(err) {
		unix.Write(fd, []byte("+end"))
		unix.Pwrite(fd, []byte("!"), 0) // appends too, on Linux
		unix.Close(fd)
		data, _ := os.ReadFile(f)
		c.ok("O_APPEND writes at the end", string(data) == "start+end!", string(data))
	}
	_, err = unix.Open(c.p("missing"), unix.O_RDONLY, 0)
	c.errIs("open a missing file", err, syscall.ENOENT)
	_, err = unix.Open(f+"/x", unix.O_RDONLY, 0)
	c.errIs("open beneath a file", err, syscall.ENOTDIR)
	_, err = unix.Open(f, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	c.errIs("O_DIRECTORY of a file", err, syscall.ENOTDIR)
	c.must(os.Mkdir(c.p("d"), 0o755))
	_, err = unix.Open(c.p("d"), unix.O_WRONLY, 0)
	c.errIs("open a directory for writing", err, syscall.EISDIR)
	c.must(os.Symlink("f", c.p("l")))
	_, err = unix.Open(c.p("l"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	c.errIs("O_NOFOLLOW of a symbolic link", err, syscall.ELOOP)
	fd, err = unix.Open(c.p("l"), unix.O_RDONLY, 0)
	c.errIs("open through a symbolic link", err, 0)
	if err == nil {
		buf := make([]byte, 16)
		n, _ := unix.Read(fd, buf)
		c.ok("it reads the target", string(buf[:n]) == "start+end!", string(buf[:n]))
		unix.Close(fd)
	}
	fd, err = unix.Open(c.p("rw"), unix.O_CREAT|unix.O_RDWR, 0o644)
	if c.must(err) {
		unix.Pwrite(fd, []byte("hello"), 100)
		buf := make([]byte, 105)
		n, _ := unix.Pread(fd, buf, 0)
		c.ok("a write past the end leaves a hole of zeros", n == 105 && bytes.Equal(buf[:100], make([]byte, 100)) && string(buf[100:]) == "hello", n)
		unix.Close(fd)
	}
	fd, err = unix.Open(c.p("ro"), unix.O_CREAT|unix.O_RDONLY, 0o444)
	c.errIs("O_CREAT|O_RDONLY with mode 0444", err, 0)
	if err == nil {
		_, werr := unix.Write(fd, []byte("x"))
		c.errIs("write to a read-only descriptor", werr, syscall.EBADF)
		unix.Close(fd)
	}
}

func checkRename(c *posixChecker) {
	a, b := c.create("a", "A"), c.create("b", "B")
	ino := c.lstat(a).Ino
	c.errIs("rename a file over another", os.Rename(a, b), 0)
	data, _ := os.ReadFile(b)
	c.ok("the target holds the source", string(data) == "A" && c.lstat(b).Ino == ino, string(data))
	_, err := os.Lstat(a)
	c.errIs("the old name is gone", err, syscall.ENOENT)
	c.must(os.Mkdir(c.p("d1"), 0o755))
	c.must(os.Mkdir(c.p("d2"), 0o755))
	c.errIs("rename a directory over an empty one", unix.Rename(c.p("d1"), c.p("d2")), 0)
	c.must(os.Mkdir(c.p("d3"), 0o755))
	c.create("d3/x", "")
	c.must(os.Mkdir(c.p("d4"), 0o755))
	c.errIs("rename over a non-empty directory", unix.Rename(c.p("d4"), c.p("d3")), syscall.ENOTEMPTY)
	c.errIs("rename a file over a directory", unix.Rename(b, c.p("d3")), syscall.EISDIR)
	c.errIs("rename a directory over a file", unix.Rename(c.p("d4"), b), syscall.ENOTDIR)
	c.errIs("rename a directory into itself", unix.Rename(c.p("d3"), c.p("d3/sub")), syscall.EINVAL)
	c.errIs("rename a missing file", os.Rename(c.p("missing"), c.p("x")), syscall.ENOENT)
	c.errIs("rename a file to itself", os.Rename(b, b), 0)
	c.must(os.Link(b, c.p("b2")))
	c.errIs("rename between two links of one file", os.Rename(b, c.p("b2")), 0)
	_, err = os.Lstat(b)
	c.ok("both names stay (POSIX: a no-op)", err == nil, err)
	c.create("x", "X")
	c.errIs("RENAME_NOREPLACE over an existing name", unix.Renameat2(unix.AT_FDCWD, c.p("x"), unix.AT_FDCWD, b, unix.RENAME_NOREPLACE), syscall.EEXIST)
	c.errIs("RENAME_EXCHANGE", unix.Renameat2(unix.AT_FDCWD, c.p("x"), unix.AT_FDCWD, c.p("d3/x"), unix.RENAME_EXCHANGE), 0)
	data, _ = os.ReadFile(c.p("d3/x"))
	c.ok("the names are exchanged", string(data) == "X", string(data))
	c.must(os.Symlink("b", c.p("l")))
	c.errIs("rename a symbolic link", os.Rename(c.p("l"), c.p("l2")), 0)
	target, err := os.Readlink(c.p("l2"))
	c.ok("the link moves, not its target", err == nil && target == "b", target, err)
	c.past(c.p("d3"))
	before := c.lstat(c.p("d3"))
	tick()
	c.must(os.Rename(c.p("x"), c.p("d3/y")))
	after := c.lstat(c.p("d3"))
	c.ok("rename updates the new parent's mtime", after.Mtim.Nano() > before.Mtim.Nano())
}

func checkRmdir(c *posixChecker) {
	c.must(os.Mkdir(c.p("d"), 0o755))
	before := c.lstat(c.dir)
	c.errIs("rmdir an empty directory", unix.Rmdir(c.p("d")), 0)
	_, err := os.Lstat(c.p("d"))
	c.errIs("it is gone", err, syscall.ENOENT)
	after := c.lstat(c.dir)
	c.ok("the parent loses a link", after.Nlink == before.Nlink-1, before.Nlink, " -> ", after.Nlink)
	c.must(os.Mkdir(c.p("full"), 0o755))
	c.create("full/f", "")
	c.errIs("rmdir a non-empty directory", unix.Rmdir(c.p("full")), syscall.ENOTEMPTY)
	c.errIs("rmdir a file", unix.Rmdir(c.p("full/f")), syscall.ENOTDIR)
	c.errIs("rmdir a missing directory", unix.Rmdir(c.p("missing")), syscall.ENOENT)
	c.errIs("rmdir .", unix.Rmdir(c.dir+"/full/."), syscall.EINVAL)
	c.must(os.Symlink("full", c.p("l")))
	c.errIs("rmdir a symbolic link to a directory", unix.Rmdir(c.p("l")), syscall.ENOTDIR)
}

func checkSymlink(c *posixChecker) {
	c.errIs("symlink", os.Symlink("some/target", c.p("l")), 0)
	st := c.lstat(c.p("l"))
	c.ok("a symbolic link whose size is its target's length", st.Mode&unix.S_IFMT == unix.S_IFLNK && st.Size == int64(len("some/target")), fmt.Sprintf("%o", st.Mode), " ", st.Size)
	target, err := os.Readlink(c.p("l"))
	c.ok("readlink returns the target", err == nil && target == "some/target", target, err)
	c.errIs("symlink over an existing name", os.Symlink("x", c.p("l")), syscall.EEXIST)
	c.errIs("symlink in a missing directory", os.Symlink("x", c.p("no/l")), syscall.ENOENT)
	_, err = os.Stat(c.p("l"))
	c.errIs("stat of a dangling link", err, syscall.ENOENT)
	long := strings.Repeat("a/", 2000)
	c.errIs("a long target", os.Symlink(long, c.p("long")), 0)
	target, _ = os.Readlink(c.p("long"))
	c.ok("the long target reads back", target == long, len(target))
	c.must(os.Symlink("loop2", c.p("loop1")))
	c.must(os.Symlink("loop1", c.p("loop2")))
	_, err = os.Stat(c.p("loop1"))
	c.errIs("a loop of links", err, syscall.ELOOP)
	c.create("f", "via link")
	c.must(os.Symlink("f", c.p("tf")))
	data, err := os.ReadFile(c.p("tf"))
	c.ok("reading through a link reads the target", err == nil && string(data) == "via link", err)
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.create("d/inner", "inner")
	c.must(os.Symlink("d", c.p("ld")))
	data, err = os.ReadFile(c.p("ld/inner"))
	c.ok("a link to a directory leads into it", err == nil && string(data) == "inner", err)
}

func checkTruncate(c *posixChecker) {
	f := c.create("f", "0123456789")
	c.errIs("truncate to grow", os.Truncate(f, 20), 0)
	data, _ := os.ReadFile(f)
	c.ok("the file grows with zeros", len(data) == 20 && bytes.Equal(data[10:], make([]byte, 10)), len(data))
	c.errIs("truncate to shrink", os.Truncate(f, 4), 0)
	data, _ = os.ReadFile(f)
	c.ok("the file shrinks", string(data) == "0123", string(data))
	c.changed("truncate", f, func() error { return os.Truncate(f, 2) }, true, true)
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.errIs("truncate a directory", os.Truncate(c.p("d"), 0), syscall.EISDIR)
	c.errIs("truncate to a negative size", unix.Truncate(f, -1), syscall.EINVAL)
	c.errIs("truncate a missing file", os.Truncate(c.p("missing"), 0), syscall.ENOENT)
	c.must(os.Symlink("f", c.p("l")))
	c.errIs("truncate through a link", os.Truncate(c.p("l"), 1), 0)
	c.ok("the target is truncated", c.lstat(f).Size == 1, c.lstat(f).Size)
}

func checkFtruncate(c *posixChecker) {
	f := c.create("f", "0123456789")
	fd, err := unix.Open(f, unix.O_RDWR, 0)
	if !c.must(err) {
		return
	}
	defer unix.Close(fd)
	c.errIs("ftruncate to grow", unix.Ftruncate(fd, 16), 0)
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	c.ok("fstat shows the new size", st.Size == 16, st.Size)
	buf := make([]byte, 16)
	n, _ := unix.Pread(fd, buf, 0)
	c.ok("the file grows with zeros", n == 16 && string(buf[:10]) == "0123456789" && bytes.Equal(buf[10:], make([]byte, 6)), n)
	c.errIs("ftruncate to shrink", unix.Ftruncate(fd, 3), 0)
	n, _ = unix.Pread(fd, buf, 0)
	c.ok("the file shrinks", n == 3 && string(buf[:3]) == "012", n)
	c.changed("ftruncate", f, func() error { return unix.Ftruncate(fd, 1) }, true, true)
	c.errIs("ftruncate to a negative size", unix.Ftruncate(fd, -1), syscall.EINVAL)
	ro, err := unix.Open(f, unix.O_RDONLY, 0)
	if c.must(err) {
		c.errIs("ftruncate a read-only descriptor", unix.Ftruncate(ro, 0), syscall.EINVAL)
		unix.Close(ro)
	}
	c.must(os.Remove(f))
	c.errIs("ftruncate an unlinked file", unix.Ftruncate(fd, 5), 0)
	unix.Fstat(fd, &st)
	c.ok("the unlinked file has the size", st.Size == 5, st.Size)
}

func checkUnlink(c *posixChecker) {
	f := c.create("f", "still here")
	c.past(c.dir)
	before := c.lstat(c.dir)
	tick()
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	if !c.must(err) {
		return
	}
	defer unix.Close(fd)
	c.errIs("unlink a file", unix.Unlink(f), 0)
	_, err = os.Lstat(f)
	c.errIs("the name is gone", err, syscall.ENOENT)
	after := c.lstat(c.dir)
	c.ok("unlink updates the parent's mtime and ctime", after.Mtim.Nano() > before.Mtim.Nano() && after.Ctim.Nano() > before.Ctim.Nano())
	buf := make([]byte, 16)
	n, err := unix.Pread(fd, buf, 0)
	c.ok("an open descriptor still reads the file", err == nil && string(buf[:n]) == "still here", err)
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	c.ok("fstat of the unlinked file shows no links", st.Nlink == 0, st.Nlink)
	g := c.create("g", "")
	c.must(os.Link(g, c.p("h")))
	tick()
	gb := c.lstat(g)
	tick()
	c.errIs("unlink one of two links", unix.Unlink(c.p("h")), 0)
	ga := c.lstat(g)
	c.ok("the other keeps the file, one link fewer", ga.Nlink == 1, ga.Nlink)
	c.ok("unlink updates the file's ctime", ga.Ctim.Nano() > gb.Ctim.Nano())
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.errIs("unlink a directory", unix.Unlink(c.p("d")), syscall.EISDIR)
	c.errIs("unlink a missing file", unix.Unlink(c.p("missing")), syscall.ENOENT)
	c.errIs("unlink beneath a file", unix.Unlink(c.p("g/x")), syscall.ENOTDIR)
	c.must(os.Symlink("g", c.p("l")))
	c.errIs("unlink a symbolic link", unix.Unlink(c.p("l")), 0)
	_, err = os.Lstat(g)
	c.ok("its target stays", err == nil, err)
	c.must(unix.Mkfifo(c.p("p"), 0o644))
	c.errIs("unlink a FIFO", unix.Unlink(c.p("p")), 0)
}

func checkUtimensat(c *posixChecker) {
	f := c.create("f", "x")
	at := time.Date(2001, 2, 3, 4, 5, 6, 789012345, time.UTC).UnixNano()
	mt := time.Date(2002, 3, 4, 5, 6, 7, 890123456, time.UTC).UnixNano()
	ts := []unix.Timespec{unix.NsecToTimespec(at), unix.NsecToTimespec(mt)}
	c.errIs("set both times", unix.UtimesNanoAt(unix.AT_FDCWD, f, ts, 0), 0)
	st := c.lstat(f)
	c.ok("both times are set to the nanosecond", st.Atim.Nano() == at && st.Mtim.Nano() == mt, st.Atim, " ", st.Mtim)
	omit := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(at)}
	c.errIs("UTIME_OMIT for atime", unix.UtimesNanoAt(unix.AT_FDCWD, f, omit, 0), 0)
	st = c.lstat(f)
	c.ok("atime kept, mtime set", st.Atim.Nano() == at && st.Mtim.Nano() == at, st.Atim, " ", st.Mtim)
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	start := time.Now().Add(-time.Minute).UnixNano()
	c.errIs("UTIME_NOW", unix.UtimesNanoAt(unix.AT_FDCWD, f, now, 0), 0)
	st = c.lstat(f)
	c.ok("the times are now", st.Atim.Nano() > start && st.Mtim.Nano() > start, st.Atim, " ", st.Mtim)
	c.changed("utimensat", f, func() error { return unix.UtimesNanoAt(unix.AT_FDCWD, f, ts, 0) }, false, true)
	c.ok("a time before 1970", unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{unix.NsecToTimespec(-1e9), unix.NsecToTimespec(-1e9)}, 0) == nil && c.lstat(f).Mtim.Sec == -1)
	c.must(os.Symlink("f", c.p("l")))
	c.past(f)
	tf := c.lstat(f)
	c.errIs("AT_SYMLINK_NOFOLLOW on a link", unix.UtimesNanoAt(unix.AT_FDCWD, c.p("l"), ts, unix.AT_SYMLINK_NOFOLLOW), 0)
	lt, ft := c.lstat(c.p("l")), c.lstat(f)
	c.ok("the link's own times are set", lt.Mtim.Nano() == mt, lt.Mtim)
	c.ok("its target's times are not", ft.Mtim.Nano() == tf.Mtim.Nano(), tf.Mtim, " -> ", ft.Mtim)
	c.errIs("utimensat following a link", unix.UtimesNanoAt(unix.AT_FDCWD, c.p("l"), ts, 0), 0)
	c.ok("the target's times are set", func() bool { st := c.lstat(f); return st.Mtim.Nano() == mt }())
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	if c.must(err) {
		c.errIs("futimens", unix.Futimes(fd, []unix.Timeval{{Sec: 1000}, {Sec: 2000}}), 0)
		c.ok("futimens sets the times", c.lstat(f).Mtim.Sec == 2000)
		unix.Close(fd)
	}
	c.errIs("utimensat of a missing file", unix.UtimesNanoAt(unix.AT_FDCWD, c.p("missing"), ts, 0), syscall.ENOENT)
	bad := []unix.Timespec{{Nsec: 2e9}, {Nsec: 0}}
	c.errIs("a nanosecond count out of range", unix.UtimesNanoAt(unix.AT_FDCWD, f, bad, 0), syscall.EINVAL)
}

func checkFallocate(c *posixChecker) {
	fd, err := unix.Open(c.p("f"), unix.O_CREAT|unix.O_RDWR, 0o644)
	if !c.must(err) {
		return
	}
	defer unix.Close(fd)
	unix.Pwrite(fd, []byte("head"), 0)
	c.errIs("posix_fallocate past the end", unix.Fallocate(fd, 0, 0, 1<<20), 0)
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	c.ok("the size grows to cover the range", st.Size == 1<<20, st.Size)
	c.ok("the blocks are allocated", st.Blocks*512 >= 1<<20, st.Blocks)
	buf := make([]byte, 8)
	n, _ := unix.Pread(fd, buf, 0)
	c.ok("the data before stays", n == 8 && string(buf[:4]) == "head" && bytes.Equal(buf[4:], make([]byte, 4)), buf[:n])
	c.errIs("posix_fallocate within the file", unix.Fallocate(fd, 0, 100, 100), 0)
	unix.Fstat(fd, &st)
	c.ok("the size is kept", st.Size == 1<<20, st.Size)
	c.errIs("FALLOC_FL_KEEP_SIZE", unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 1<<20, 1<<20), 0)
	unix.Fstat(fd, &st)
	c.ok("the size is kept", st.Size == 1<<20, st.Size)
	c.errIs("a zero length", unix.Fallocate(fd, 0, 0, 0), syscall.EINVAL)
	c.errIs("a negative offset", unix.Fallocate(fd, 0, -1, 10), syscall.EINVAL)
	ro, err := unix.Open(c.p("f"), unix.O_RDONLY, 0)
	if c.must(err) {
		c.errIs("a read-only descriptor", unix.Fallocate(ro, 0, 0, 10), syscall.EBADF)
		unix.Close(ro)
	}
}

func checkXattr(c *posixChecker) {
	f := c.create("f", "x")
	c.errIs("setxattr user.*", unix.Setxattr(f, "user.a", []byte("1"), 0), 0)
	buf := make([]byte, 64)
	n, err := unix.Getxattr(f, "user.a", buf)
	c.ok("getxattr reads it back", err == nil && string(buf[:n]) == "1", err)
	c.errIs("an empty value", unix.Setxattr(f, "user.empty", nil, 0), 0)
	n, err = unix.Getxattr(f, "user.empty", buf)
	c.ok("the empty value reads back", err == nil && n == 0, err)
	big := bytes.Repeat([]byte("v"), 4000)
	c.errIs("a 4000-byte value", unix.Setxattr(f, "user.big", big, 0), 0)
	bigBuf := make([]byte, 8192)
	n, err = unix.Getxattr(f, "user.big", bigBuf)
	c.ok("the big value reads back", err == nil && bytes.Equal(bigBuf[:n], big), err)
	n, err = unix.Listxattr(f, buf)
	names := strings.Split(strings.TrimSuffix(string(buf[:max(n, 0)]), "\x00"), "\x00")
	slices.Sort(names)
	c.ok("listxattr names them all", err == nil && slices.Equal(names, []string{"user.a", "user.big", "user.empty"}), names, err)
	c.errIs("XATTR_CREATE of an existing one", unix.Setxattr(f, "user.a", []byte("2"), unix.XATTR_CREATE), syscall.EEXIST)
	c.errIs("XATTR_REPLACE of a missing one", unix.Setxattr(f, "user.b", []byte("2"), unix.XATTR_REPLACE), syscall.ENODATA)
	c.errIs("XATTR_REPLACE of an existing one", unix.Setxattr(f, "user.a", []byte("3"), unix.XATTR_REPLACE), 0)
	_, err = unix.Getxattr(f, "user.a", buf[:0])
	c.errIs("asking the size", err, 0)
	_, err = unix.Getxattr(f, "user.big", buf[:10])
	c.errIs("a buffer too small", err, syscall.ERANGE)
	c.errIs("removexattr", unix.Removexattr(f, "user.a"), 0)
	_, err = unix.Getxattr(f, "user.a", buf)
	c.errIs("a removed attribute", err, syscall.ENODATA)
	c.errIs("removexattr of a missing one", unix.Removexattr(f, "user.a"), syscall.ENODATA)
	c.must(os.Mkdir(c.p("d"), 0o755))
	c.errIs("setxattr on a directory", unix.Setxattr(c.p("d"), "user.d", []byte("1"), 0), 0)
	c.must(os.Symlink("f", c.p("l")))
	c.errIs("lsetxattr user.* on a link", unix.Lsetxattr(c.p("l"), "user.l", []byte("1"), 0), syscall.EPERM)
	_, err = unix.Lgetxattr(c.p("l"), "user.l", buf)
	c.errIs("lgetxattr user.* on a link", err, syscall.ENODATA)
	c.errIs("setxattr through a link sets the target's", unix.Setxattr(c.p("l"), "user.via", []byte("1"), 0), 0)
	_, err = unix.Getxattr(f, "user.via", buf)
	c.errIs("the target has it", err, 0)
	c.must(unix.Mkfifo(c.p("p"), 0o644))
	c.errIs("setxattr user.* on a FIFO", unix.Setxattr(c.p("p"), "user.p", []byte("1"), 0), syscall.EPERM)
	_, err = unix.Getxattr(c.p("missing"), "user.a", buf)
	c.errIs("getxattr of a missing file", err, syscall.ENOENT)
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	if c.must(err) {
		c.errIs("fsetxattr", unix.Fsetxattr(fd, "user.fd", []byte("fd"), 0), 0)
		n, err = unix.Fgetxattr(fd, "user.fd", buf)
		c.ok("fgetxattr", err == nil && string(buf[:n]) == "fd", err)
		unix.Close(fd)
	}
}

// fsName names the file system dir is on.
func fsName(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err.Error()
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	}
	return fmt.Sprintf("magic %#x", st.Type)
}

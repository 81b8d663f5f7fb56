package iofs

import (
	"context"
	"errors"
	"os"
	"path"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// local is the backend of the "local" method: files beneath a directory of
// the execute machine (the job's scratch directory). Paths are relative to
// it and resolved with openat2 RESOLVE_BENEATH, so the shadow's mapping
// cannot point iofs, which runs as root, anywhere else.
type local struct {
	dir string
}

func (l *local) openAt(p string, flags int, mode uint32) (int, error) {
	if l.dir == "" {
		return -1, syscall.ENOENT
	}
	dfd, err := unix.Open(l.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode & 0o7777)
	}
	fd, err := unix.Openat2(dfd, path.Clean("./"+p), how)
	if errors.Is(err, unix.EXDEV) {
		return -1, syscall.EACCES
	}
	return fd, err
}

// parent opens the directory holding p, for operations on the name.
func (l *local) parent(p string) (int, string, error) {
	p = path.Clean("/" + p)[1:]
	if p == "" {
		return -1, "", syscall.EBUSY
	}
	fd, err := l.openAt(path.Dir(p), unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, path.Base(p), err
}

func statFd(fd int) (Attr, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Attr{}, err
	}
	return attrOfStat(&st), nil
}

func attrOfStat(st *unix.Stat_t) Attr {
	return Attr{Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: uint32(st.Nlink), Uid: st.Uid, Gid: st.Gid, Size: uint64(st.Size),
		Blocks: uint64(st.Blocks), Atime: st.Atim.Nano(), Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

func (l *local) stat(_ context.Context, p string) (Attr, error) {
	fd, err := l.openAt(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(fd)
	return statFd(fd)
}

func (l *local) open(_ context.Context, p string, flags, mode uint32) (handle, Attr, error) {
	flags &= unix.O_ACCMODE | unix.O_APPEND | unix.O_TRUNC | unix.O_CREAT | unix.O_EXCL | unix.O_DIRECTORY
	fd, err := l.openAt(p, int(flags)|unix.O_NOCTTY, mode)
	if err != nil {
		return nil, Attr{}, err
	}
	a, err := statFd(fd)
	if err != nil {
		unix.Close(fd)
		return nil, Attr{}, err
	}
	return &localFile{fd: fd}, a, nil
}

func (l *local) setattr(_ context.Context, p string, set SetAttr) (Attr, error) {
	fd, err := l.openAt(p, unix.O_PATH, 0)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(fd)
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	if set.Mode != nil {
		err = unix.Fchmodat(unix.AT_FDCWD, proc, *set.Mode&0o7777, 0)
	}
	if err == nil && set.Size != nil {
		err = unix.Truncate(proc, int64(*set.Size))
	}
	if err == nil && (set.Atime != nil || set.Mtime != nil) {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if set.Atime != nil {
			ts[0] = unix.NsecToTimespec(*set.Atime)
		}
		if set.Mtime != nil {
			ts[1] = unix.NsecToTimespec(*set.Mtime)
		}
		err = unix.UtimesNanoAt(unix.AT_FDCWD, proc, ts, 0)
	}
	if err != nil {
		return Attr{}, err
	}
	return statFd(fd)
}

func (l *local) readdir(_ context.Context, p string) ([]DirEntry, error) {
	fd, err := l.openAt(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(ents))
	for i, e := range ents {
		out[i] = DirEntry{Name: e.Name(), Mode: typeBits(e.Type())}
	}
	return out, nil
}

// typeBits converts Go's file type bits to st_mode's.
func typeBits(m os.FileMode) uint32 {
	switch {
	case m&os.ModeDir != 0:
		return unix.S_IFDIR
	case m&os.ModeSymlink != 0:
		return unix.S_IFLNK
	case m&os.ModeNamedPipe != 0:
		return unix.S_IFIFO
	case m&os.ModeSocket != 0:
		return unix.S_IFSOCK
	case m&os.ModeCharDevice != 0:
		return unix.S_IFCHR
	case m&os.ModeDevice != 0:
		return unix.S_IFBLK
	}
	return unix.S_IFREG
}

func (l *local) mkdir(_ context.Context, p string, mode uint32) (Attr, error) {
	dfd, base, err := l.parent(p)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(dfd)
	if err := unix.Mkdirat(dfd, base, mode&0o7777); err != nil {
		return Attr{}, err
	}
	var st unix.Stat_t
	err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	return attrOfStat(&st), err
}

func (l *local) unlink(_ context.Context, p string) error { return l.remove(p, 0) }
func (l *local) rmdir(_ context.Context, p string) error  { return l.remove(p, unix.AT_REMOVEDIR) }

func (l *local) remove(p string, flags int) error {
	dfd, base, err := l.parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Unlinkat(dfd, base, flags)
}

func (l *local) rename(_ context.Context, o, n string, flags uint32) error {
	od, ob, err := l.parent(o)
	if err != nil {
		return err
	}
	defer unix.Close(od)
	nd, nb, err := l.parent(n)
	if err != nil {
		return err
	}
	defer unix.Close(nd)
	return unix.Renameat2(od, ob, nd, nb, uint(flags))
}

func (l *local) symlink(_ context.Context, target, p string) (Attr, error) {
	dfd, base, err := l.parent(p)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(dfd)
	if err := unix.Symlinkat(target, dfd, base); err != nil {
		return Attr{}, err
	}
	var st unix.Stat_t
	err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	return attrOfStat(&st), err
}

func (l *local) readlink(_ context.Context, p string) (string, error) {
	fd, err := l.openAt(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func (l *local) link(_ context.Context, o, n string) (Attr, error) {
	od, ob, err := l.parent(o)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(od)
	nd, nb, err := l.parent(n)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(nd)
	if err := unix.Linkat(od, ob, nd, nb, 0); err != nil {
		return Attr{}, err
	}
	var st unix.Stat_t
	err = unix.Fstatat(nd, nb, &st, unix.AT_SYMLINK_NOFOLLOW)
	return attrOfStat(&st), err
}

// mknod makes FIFOs, sockets and regular files; iofs runs as root, so it
// makes no device for the job.
func (l *local) mknod(_ context.Context, p string, mode uint32) (Attr, error) {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFREG, 0:
	default:
		return Attr{}, syscall.EPERM
	}
	dfd, base, err := l.parent(p)
	if err != nil {
		return Attr{}, err
	}
	defer unix.Close(dfd)
	if err := unix.Mknodat(dfd, base, mode&(unix.S_IFMT|0o7777), 0); err != nil {
		return Attr{}, err
	}
	var st unix.Stat_t
	err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	return attrOfStat(&st), err
}

// xattrPath opens p for its user.* attributes, not following a link it
// ends in; ok reports whether it may have them (regular files and
// directories only, as Linux has it).
func (l *local) xattrPath(p string) (fd int, proc string, ok bool, err error) {
	fd, err = l.openAt(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, "", false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, "", false, err
	}
	t := st.Mode & unix.S_IFMT
	return fd, "/proc/self/fd/" + strconv.Itoa(fd), t == unix.S_IFREG || t == unix.S_IFDIR, nil
}

func (l *local) getxattr(_ context.Context, p, name string) ([]byte, error) {
	if !isUserXattr(name) {
		return nil, syscall.EOPNOTSUPP
	}
	fd, proc, ok, err := l.xattrPath(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if !ok {
		return nil, syscall.ENODATA
	}
	buf := make([]byte, xattrMax)
	n, err := unix.Getxattr(proc, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func (l *local) listxattr(_ context.Context, p string) ([]byte, error) {
	fd, proc, ok, err := l.xattrPath(p)
	if err != nil || !ok {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, xattrMax)
	n, err := unix.Listxattr(proc, buf)
	if err != nil {
		return nil, err
	}
	return userXattrs(buf[:n]), nil
}

func (l *local) setxattr(_ context.Context, p, name string, value []byte, flags uint32) error {
	return l.changeXattr(p, name, func(proc string) error { return unix.Setxattr(proc, name, value, int(flags)) })
}

func (l *local) removexattr(_ context.Context, p, name string) error {
	return l.changeXattr(p, name, func(proc string) error { return unix.Removexattr(proc, name) })
}

func (l *local) changeXattr(p, name string, change func(proc string) error) error {
	if !isUserXattr(name) {
		return syscall.EOPNOTSUPP
	}
	fd, proc, ok, err := l.xattrPath(p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !ok {
		return syscall.EPERM
	}
	return change(proc)
}

func (l *local) syncDir(_ context.Context, p string) error {
	fd, err := l.openAt(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}

// localFile is a file open on the execute machine.
type localFile struct {
	fd int
}

func (f *localFile) reopen(_ context.Context, flags uint32) (handle, error) {
	flags &= unix.O_ACCMODE | unix.O_APPEND
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(f.fd), int(flags)|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return &localFile{fd: fd}, nil
}

func (f *localFile) ReadAt(_ context.Context, dest []byte, off int64) ([]byte, error) {
	n, err := unix.Pread(f.fd, dest, off)
	if err != nil {
		return nil, err
	}
	return dest[:n], nil
}

// WriteAt writes at off; on a file opened O_APPEND, Linux's pwrite appends.
func (f *localFile) WriteAt(_ context.Context, data []byte, off int64) (int, error) {
	done := 0
	for done < len(data) {
		n, err := unix.Pwrite(f.fd, data[done:], off+int64(done))
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

func (f *localFile) allocate(_ context.Context, mode uint32, off, length int64) error {
	return unix.Fallocate(f.fd, mode, off, length)
}

func (f *localFile) Truncate(_ context.Context, size int64) error { return unix.Ftruncate(f.fd, size) }
func (f *localFile) Stat(context.Context) (Attr, error)           { return statFd(f.fd) }
func (f *localFile) Flush(context.Context) error                  { return nil }
func (f *localFile) Sync(context.Context) error                   { return unix.Fsync(f.fd) }
func (f *localFile) Close(context.Context) error                  { return unix.Close(f.fd) }

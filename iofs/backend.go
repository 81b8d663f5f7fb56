package iofs

import (
	"context"
	"syscall"
)

// A backend reaches the files of one base method by their physical paths.
type backend interface {
	stat(ctx context.Context, path string) (Attr, error)
	// open returns the file and its attributes at open.
	open(ctx context.Context, path string, flags, mode uint32) (handle, Attr, error)
	setattr(ctx context.Context, path string, set SetAttr) (Attr, error)
	readdir(ctx context.Context, path string) ([]DirEntry, error)
	mkdir(ctx context.Context, path string, mode uint32) (Attr, error)
	unlink(ctx context.Context, path string) error
	rmdir(ctx context.Context, path string) error
	rename(ctx context.Context, oldPath, newPath string, flags uint32) error
	symlink(ctx context.Context, target, path string) (Attr, error)
	readlink(ctx context.Context, path string) (string, error)
	link(ctx context.Context, oldPath, newPath string) (Attr, error)
	mknod(ctx context.Context, path string, mode uint32) (Attr, error)
	getxattr(ctx context.Context, path, name string) ([]byte, error)
	listxattr(ctx context.Context, path string) ([]byte, error)
	setxattr(ctx context.Context, path, name string, value []byte, flags uint32) error
	removexattr(ctx context.Context, path, name string) error
	syncDir(ctx context.Context, path string) error
}

// A handle is an open physical file. ReadAt returns the bytes read, in dest
// or in a slice of its own, short only at the end of the file.
type handle interface {
	ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error)
	WriteAt(ctx context.Context, data []byte, off int64) (int, error)
	Truncate(ctx context.Context, size int64) error
	Stat(ctx context.Context) (Attr, error)
	// Flush pushes buffered writes through; it runs at every close(2).
	Flush(ctx context.Context) error
	Sync(ctx context.Context) error
	Close(ctx context.Context) error
}

// An attrSetter changes the attributes of its open file, which may have no
// name any more.
type attrSetter interface {
	setattr(ctx context.Context, set SetAttr) (Attr, error)
}

// A closeReporter knows the attributes its file was left with when it was
// closed, if the shadow said.
type closeReporter interface {
	closedAttr() (Attr, bool)
}

// An allocator allocates space of its file, as fallocate(2). Handles that
// are not allocators answer EOPNOTSUPP, and posix_fallocate then writes
// the space itself.
type allocator interface {
	allocate(ctx context.Context, mode uint32, off, length int64) error
}

// A reopener opens its file once more. iofs uses it for nodes whose name
// is gone but which are open (a restored checkpoint opens the files of its
// descriptors through /proc/self/fd).
type reopener interface {
	reopen(ctx context.Context, flags uint32) (handle, error)
}

// remote is the backend of the "remote" method: the shadow's I/O service.
type remote struct {
	c Client
	// prefetch is how much of a file Open returns with the handle.
	prefetch int
}

func (r *remote) stat(ctx context.Context, path string) (Attr, error) { return r.c.Stat(ctx, path) }

func (r *remote) open(ctx context.Context, path string, flags, mode uint32) (handle, Attr, error) {
	o, err := r.c.Open(ctx, path, flags, mode, r.prefetch)
	if err != nil {
		return nil, Attr{}, err
	}
	h := &remoteFile{c: r.c, path: path, flags: flags, id: o.Handle, attr: o.Attr}
	if len(o.Data) > 0 || o.EOF {
		h.head, h.headEOF = o.Data, o.EOF
	}
	return h, o.Attr, nil
}

func (r *remote) setattr(ctx context.Context, path string, set SetAttr) (Attr, error) {
	return r.c.SetAttr(ctx, path, set)
}
func (r *remote) readdir(ctx context.Context, path string) ([]DirEntry, error) {
	return r.c.ReadDir(ctx, path)
}
func (r *remote) mkdir(ctx context.Context, path string, mode uint32) (Attr, error) {
	return r.c.Mkdir(ctx, path, mode)
}
func (r *remote) unlink(ctx context.Context, path string) error { return r.c.Unlink(ctx, path) }
func (r *remote) rmdir(ctx context.Context, path string) error  { return r.c.Rmdir(ctx, path) }
func (r *remote) rename(ctx context.Context, o, n string, flags uint32) error {
	return r.c.Rename(ctx, o, n, flags)
}
func (r *remote) symlink(ctx context.Context, target, path string) (Attr, error) {
	return r.c.Symlink(ctx, target, path)
}
func (r *remote) readlink(ctx context.Context, path string) (string, error) {
	return r.c.Readlink(ctx, path)
}
func (r *remote) link(ctx context.Context, o, n string) (Attr, error) { return r.c.Link(ctx, o, n) }
func (r *remote) mknod(ctx context.Context, path string, mode uint32) (Attr, error) {
	return r.c.Mknod(ctx, path, mode)
}
func (r *remote) getxattr(ctx context.Context, path, name string) ([]byte, error) {
	return r.c.Getxattr(ctx, path, name)
}
func (r *remote) listxattr(ctx context.Context, path string) ([]byte, error) {
	return r.c.Listxattr(ctx, path)
}
func (r *remote) setxattr(ctx context.Context, path, name string, value []byte, flags uint32) error {
	return r.c.Setxattr(ctx, path, name, value, flags)
}
func (r *remote) removexattr(ctx context.Context, path, name string) error {
	return r.c.Removexattr(ctx, path, name)
}
func (r *remote) syncDir(ctx context.Context, path string) error { return r.c.SyncDir(ctx, path) }

// readOnly fills in the name operations of a backend that cannot change
// anything (http).
type readOnly struct{}

func (readOnly) setattr(context.Context, string, SetAttr) (Attr, error) { return Attr{}, syscall.EROFS }
func (readOnly) readdir(context.Context, string) ([]DirEntry, error)    { return nil, syscall.ENOTDIR }
func (readOnly) mkdir(context.Context, string, uint32) (Attr, error)    { return Attr{}, syscall.EROFS }
func (readOnly) unlink(context.Context, string) error                   { return syscall.EROFS }
func (readOnly) rmdir(context.Context, string) error                    { return syscall.EROFS }
func (readOnly) rename(context.Context, string, string, uint32) error   { return syscall.EROFS }
func (readOnly) symlink(context.Context, string, string) (Attr, error)  { return Attr{}, syscall.EROFS }
func (readOnly) readlink(context.Context, string) (string, error)       { return "", syscall.EINVAL }
func (readOnly) link(context.Context, string, string) (Attr, error)     { return Attr{}, syscall.EROFS }
func (readOnly) mknod(context.Context, string, uint32) (Attr, error)    { return Attr{}, syscall.EROFS }
func (readOnly) getxattr(context.Context, string, string) ([]byte, error) {
	return nil, syscall.ENODATA
}
func (readOnly) listxattr(context.Context, string) ([]byte, error) { return nil, nil }
func (readOnly) setxattr(context.Context, string, string, []byte, uint32) error {
	return syscall.EROFS
}
func (readOnly) removexattr(context.Context, string, string) error { return syscall.EROFS }
func (readOnly) syncDir(context.Context, string) error             { return nil }

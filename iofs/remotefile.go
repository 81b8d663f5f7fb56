package iofs

import (
	"context"
	"errors"
	"sync"
	"syscall"
)

// remoteFile is a file open at the shadow.
type remoteFile struct {
	c     Client
	path  string
	flags uint32

	mu sync.Mutex // guards id, head
	// id 0: the shadow sent the whole read-only file with the open and
	// keeps nothing open; head holds it.
	id uint64
	// head holds the file's first bytes as returned by Open, so that small
	// files are read without another round trip; dropped at the first
	// change.
	head    []byte
	headEOF bool
	// attr is the file's attributes at open, for a file held whole (id
	// 0) whose name is gone.
	attr Attr
	// left is the file's attributes at close, if the shadow said.
	left   Attr
	leftOK bool
	// reopened: the shadow forgot the first handle; the writes made
	// through this one are not all those made through the file.
	reopened bool
}

// retry runs op with the current handle; if the shadow forgot the handle
// (it was restarted), the file is opened again by name, once.
func (f *remoteFile) retry(ctx context.Context, op func(id uint64) error) error {
	f.mu.Lock()
	id := f.id
	f.mu.Unlock()
	err := op(id)
	if !errors.Is(err, syscall.ESTALE) {
		return err
	}
	f.mu.Lock()
	if f.id == id {
		o, oerr := f.openAgain(ctx)
		if oerr != nil {
			f.mu.Unlock()
			return oerr
		}
		f.id, f.reopened = o.Handle, true
	}
	id = f.id
	f.mu.Unlock()
	return op(id)
}

func (f *remoteFile) ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error) {
	f.mu.Lock()
	head, eof := f.head, f.headEOF
	f.mu.Unlock()
	if end := off + int64(len(dest)); head != nil && (end <= int64(len(head)) || eof) {
		if off >= int64(len(head)) {
			return nil, nil
		}
		return head[off:min(end, int64(len(head)))], nil
	}
	var data []byte
	err := f.retry(ctx, func(id uint64) error {
		var err error
		data, err = f.c.Read(ctx, id, off, dest)
		return err
	})
	return data, err
}

func (f *remoteFile) reopen(ctx context.Context, flags uint32) (handle, error) {
	f.mu.Lock()
	id, head, eof := f.id, f.head, f.headEOF
	f.mu.Unlock()
	if id == 0 {
		return &remoteFile{c: f.c, path: f.path, flags: flags, head: head, headEOF: eof, attr: f.attr}, nil
	}
	o, err := f.c.Reopen(ctx, id, flags)
	if err != nil {
		return nil, err
	}
	return &remoteFile{c: f.c, path: f.path, flags: flags, id: o.Handle}, nil
}

// refresh forgets the file's first bytes the open brought along. A file
// the shadow sent whole and keeps nothing open of is opened again.
func (f *remoteFile) refresh(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.head, f.headEOF = nil, false
	if f.id != 0 {
		return nil
	}
	o, err := f.openAgain(ctx)
	if err != nil {
		return err
	}
	f.id = o.Handle
	if len(o.Data) > 0 || o.EOF {
		f.head, f.headEOF = o.Data, o.EOF
	}
	return nil
}

// openAgain opens the file by its name as the job opened it, but for
// what would create or empty it.
func (f *remoteFile) openAgain(ctx context.Context) (Opened, error) {
	return f.c.Open(ctx, f.path, f.flags&^(syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC), 0, 0)
}

func (f *remoteFile) dropHead() {
	f.mu.Lock()
	f.head, f.headEOF = nil, false
	f.mu.Unlock()
}

func (f *remoteFile) WriteAt(ctx context.Context, data []byte, off int64) (int, error) {
	return f.writeBatch(ctx, Writes{Offset: off, Data: data})
}

func (f *remoteFile) writeBatch(ctx context.Context, w Writes) (int, error) {
	f.dropHead()
	var n int
	err := f.retry(ctx, func(id uint64) error {
		var err error
		n, err = f.c.Write(ctx, id, w)
		return err
	})
	return n, err
}

func (f *remoteFile) Truncate(ctx context.Context, size int64) error {
	f.dropHead()
	return f.retry(ctx, func(id uint64) error { return f.c.Ftruncate(ctx, id, size) })
}

func (f *remoteFile) allocate(ctx context.Context, mode uint32, off, length int64) error {
	f.dropHead()
	if f.closed() {
		return syscall.EBADF
	}
	return f.retry(ctx, func(id uint64) error { return f.c.Fallocate(ctx, id, mode, off, length) })
}

func (f *remoteFile) Stat(ctx context.Context) (Attr, error) {
	if f.closed() {
		a, err := f.c.Stat(ctx, f.path)
		if errors.Is(err, syscall.ENOENT) {
			// Unlinked while held whole: the file is what was read.
			a, err = f.attr, nil
			a.Nlink = 0
		}
		return a, err
	}
	var a Attr
	err := f.retry(ctx, func(id uint64) error {
		var err error
		a, err = f.c.Fstat(ctx, id)
		return err
	})
	return a, err
}

func (f *remoteFile) Flush(context.Context) error { return nil }

func (f *remoteFile) closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id == 0
}

func (f *remoteFile) Sync(ctx context.Context) error {
	if f.closed() {
		return nil
	}
	return f.retry(ctx, func(id uint64) error { return f.c.Fsync(ctx, id, 0, false) })
}

// errNotCounted says that a file cannot sync after a count of writes: it
// was opened again, and the count is not the handle's.
var errNotCounted = errors.New("writes not counted on this handle")

// syncAfter makes the file durable (its data only, if dataOnly) once the
// first n writes made through it are (see wire.FsyncRequest), in one
// round trip with them.
func (f *remoteFile) syncAfter(ctx context.Context, n uint64, dataOnly bool) error {
	f.mu.Lock()
	id, reopened := f.id, f.reopened
	f.mu.Unlock()
	if id == 0 || reopened {
		return errNotCounted
	}
	err := f.c.Fsync(ctx, id, n, dataOnly)
	if errors.Is(err, syscall.ESTALE) {
		return errNotCounted
	}
	return err
}

func (f *remoteFile) Close(ctx context.Context) error {
	f.mu.Lock()
	id := f.id
	f.mu.Unlock()
	if id == 0 {
		return nil
	}
	a, err := f.c.Close(ctx, id)
	if err == nil {
		f.mu.Lock()
		f.left, f.leftOK = a, true
		f.mu.Unlock()
	}
	if errors.Is(err, syscall.EBADF) {
		// A restarted shadow has closed it already.
		return nil
	}
	return err
}

// closedAttr reports the attributes at close of a file open for writing:
// those of a file only read may be another's changes, made since.
func (f *remoteFile) closedAttr() (Attr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.left, f.leftOK && f.flags&syscall.O_ACCMODE != syscall.O_RDONLY
}

// setattr changes the attributes of the open file, also once unlinked.
func (f *remoteFile) setattr(ctx context.Context, set SetAttr) (Attr, error) {
	if f.closed() {
		return f.c.SetAttr(ctx, f.path, set)
	}
	var a Attr
	err := f.retry(ctx, func(id uint64) error {
		var err error
		a, err = f.c.SetAttrHandle(ctx, id, set)
		return err
	})
	return a, err
}

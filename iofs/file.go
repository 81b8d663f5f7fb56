package iofs

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// file is an open file as FUSE sees it. It does not offer a passthrough
// descriptor: every read and write goes through iofs.
type file struct {
	h        handle
	node     *node
	writable bool
	// gen is the node's count of changes (see node.changed) that what
	// h holds of the file is as of; node.mu guards it.
	gen uint64

	// mu keeps Server.Sync from settling a file being closed.
	mu     sync.Mutex
	closed bool
}

// A settler brings the writes made through it to the submit side, leaving
// any error to be reported to the job too.
type settler interface {
	settle() error
}

// A refresher forgets what it holds of its file's contents (what its open
// brought along, blocks it cached), which the job has changed since
// through another descriptor: its reads then ask the shadow.
type refresher interface {
	refresh(ctx context.Context) error
}

// settle brings the writes made through the file to the submit side.
func (f *file) settle(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil // Release brought them
	}
	if s, ok := f.h.(settler); ok {
		return s.settle()
	}
	return f.h.Flush(ctx)
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
)

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	// What the job wrote through its other descriptors of the file comes
	// first, and replaces what this one brought along when it opened.
	f.node.drainOthers(f)
	if r, ok := f.h.(refresher); ok && f.node.outdated(f) {
		if err := r.refresh(ctx); err != nil {
			return nil, toErrno(err)
		}
	}
	data, err := f.h.ReadAt(ctx, dest, off)
	if err != nil {
		return nil, toErrno(err)
	}
	if !f.writable {
		f.node.noteRead(off, len(dest))
	}
	return fuse.ReadResultData(data), 0
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := f.h.WriteAt(ctx, data, off)
	if err != nil && n == 0 {
		return 0, toErrno(err)
	}
	f.node.changed(f)
	if b, ok := f.h.(*behind); ok && n > 0 {
		if errno := f.killSetID(ctx, b); errno != 0 {
			return 0, errno
		}
	}
	return uint32(n), 0
}

// killSetID clears the set-user-ID and set-group-ID bits of a file an
// unprivileged job writes, as a write(2) does. The kernel leaves that to
// iofs (FUSE's HANDLE_KILLPRIV_V2, which spares a getxattr of
// security.capability before every write): the shadow clears them, and
// the kernel forgets the mode it knew. Only such files' writes come here
// with the bits set, each through to iofs.
func (f *file) killSetID(ctx context.Context, b *behind) syscall.Errno {
	b.mu.Lock()
	mode := b.attr.Mode
	b.mu.Unlock()
	kill := mode & syscall.S_ISUID
	if mode&(syscall.S_ISGID|syscall.S_IXGRP) == syscall.S_ISGID|syscall.S_IXGRP {
		kill |= syscall.S_ISGID // without group execution, the bit marks locking
	}
	if c, ok := fuse.FromContext(ctx); kill == 0 || (ok && c.Uid == 0) {
		return 0
	}
	// The shadow's write, as the owner, has cleared them already where
	// the owner is not root; a file the owner may write but not change
	// keeps what that write left.
	cleared := mode &^ kill & 0o7777
	if _, err := b.setattr(ctx, SetAttr{Mode: &cleared}); err != nil {
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) {
			return toErrno(err)
		}
		b.mu.Lock()
		b.attr.Mode = mode &^ kill // not asked again at every write
		b.mu.Unlock()
	}
	f.node.NotifyContent(-1, 0) // the attributes only
	return 0
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	a, ok := f.h.(allocator)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	f.node.drainOthers(f)
	err := a.allocate(ctx, mode, int64(off), int64(size))
	f.node.changed(f)
	return toErrno(err)
}

func (f *file) Flush(ctx context.Context) syscall.Errno { return toErrno(f.h.Flush(ctx)) }

// Release runs after the job has let go of the file, so nobody hears its
// error but the log.
func (f *file) Release(ctx context.Context) syscall.Errno {
	f.mu.Lock()
	f.closed = true
	err := f.h.Close(ctx)
	f.mu.Unlock()
	// Only now: the node's other files wait for its writes before they
	// read.
	f.node.forget(f)
	if err != nil {
		f.node.fsys.opts.Logger.Warn("iofs: close", "err", err)
		return toErrno(err)
	}
	// A file the job wrote changed on the submit side by the job's own
	// hand: the kernel's pages of it are still good.
	if c, ok := f.h.(closeReporter); ok {
		if a, ok := c.closedAttr(); ok {
			f.node.record(a)
		}
	}
	return 0
}

package iofs

import (
	"context"
	"strings"
)

// Client is the shadow as iofs sees it: phase one of the two-phase open
// (Resolve) and the remote file operations of phase two, which take
// physical paths. File-system errors are syscall.Errno values.
type Client interface {
	// Resolve is phase one. A remote regular file of at most prefetch
	// bytes comes back whole in Resolution.Data.
	Resolve(ctx context.Context, name string, prefetch int) (Resolution, error)
	Stat(ctx context.Context, path string) (Attr, error)
	// Open opens or creates a file. For reading, up to prefetch bytes from
	// offset 0 come back in Opened.Data.
	Open(ctx context.Context, path string, flags, mode uint32, prefetch int) (Opened, error)
	// Reopen opens the file behind an open handle again, also after its
	// name was unlinked.
	Reopen(ctx context.Context, handle uint64, flags uint32) (Opened, error)
	// Read returns up to len(dest) bytes at off, read into dest; fewer
	// only at the end of the file. syscall.ESTALE means the shadow no
	// longer knows the handle.
	Read(ctx context.Context, handle uint64, off int64, dest []byte) ([]byte, error)
	// Write writes w's pieces in order, then syncs as w asks, in one
	// round trip; it returns the bytes written before any error.
	Write(ctx context.Context, handle uint64, w Writes) (int, error)
	Fstat(ctx context.Context, handle uint64) (Attr, error)
	Ftruncate(ctx context.Context, handle uint64, size int64) error
	Fallocate(ctx context.Context, handle uint64, mode uint32, off, length int64) error
	// Fsync makes the file durable (its data only, as fdatasync(2),
	// if dataOnly) once afterWrites Writes of the handle (those sent
	// before it, maybe still on their way) are made.
	Fsync(ctx context.Context, handle uint64, afterWrites uint64, dataOnly bool) error
	// Close returns the file's attributes as it was left.
	Close(ctx context.Context, handle uint64) (Attr, error)
	// SetAttr changes the file path names; a symbolic link it ends in is
	// changed itself, not followed.
	SetAttr(ctx context.Context, path string, set SetAttr) (Attr, error)
	// SetAttrHandle changes the attributes of an open file.
	SetAttrHandle(ctx context.Context, handle uint64, set SetAttr) (Attr, error)
	ReadDir(ctx context.Context, path string) ([]DirEntry, error)
	Mkdir(ctx context.Context, path string, mode uint32) (Attr, error)
	Unlink(ctx context.Context, path string) error
	Rmdir(ctx context.Context, path string) error
	Rename(ctx context.Context, oldPath, newPath string, flags uint32) error
	Symlink(ctx context.Context, target, path string) (Attr, error)
	Readlink(ctx context.Context, path string) (string, error)
	// Link makes newPath another name of oldPath (not following a
	// symbolic link).
	Link(ctx context.Context, oldPath, newPath string) (Attr, error)
	// Mknod makes a FIFO or a socket (mode holds type and permissions).
	Mknod(ctx context.Context, path string, mode uint32) (Attr, error)
	// The user.* extended attributes; Listxattr returns NUL-ended names.
	Getxattr(ctx context.Context, path, name string) ([]byte, error)
	Listxattr(ctx context.Context, path string) ([]byte, error)
	Setxattr(ctx context.Context, path, name string, value []byte, flags uint32) error
	Removexattr(ctx context.Context, path, name string) error
	// SyncDir makes a directory's entries durable.
	SyncDir(ctx context.Context, path string) error
	// Account tells the shadow what the job did that it could not see:
	// opens and reads of small files that came whole with Resolve.
	Account(ctx context.Context, uses []FileUse) error
}

// Writes is a batch of writes to one file: Data written at Offset, or,
// if Extents is set, cut into pieces at its (offset, length) pairs; then
// the file synced as Sync says.
type Writes struct {
	Offset  int64
	Data    []byte
	Extents []int64
	// Mtime, if not nil, is the file's modification time once the data
	// is written, before the sync: the kernel's, written back.
	Mtime *int64
	Sync  Sync
}

// Sync says what follows a batch of writes.
type Sync uint8

const (
	SyncNone Sync = iota
	SyncData      // fdatasync
	SyncAll       // fsync
)

// FileUse is what the job did with a physical file that the shadow did
// not see.
type FileUse struct {
	Path         string
	Opens, Reads uint32
	BytesRead    uint64
}

// Physical is a physical file name: methods outermost first, then the path
// the last (base) method opens.
type Physical struct {
	Methods []string
	Path    string
	// BufferSize and BufferBlockSize size the buffer method's cache.
	BufferSize, BufferBlockSize int64
}

// Base returns the method that reaches the bytes.
func (p Physical) Base() string { return p.Methods[len(p.Methods)-1] }

func (p Physical) has(method string) bool {
	for _, m := range p.Methods[:len(p.Methods)-1] {
		if m == method {
			return true
		}
	}
	return false
}

// String formats p as the shadow does ("buffer:remote:/a", "http://h/p").
func (p Physical) String() string {
	return strings.Join(p.Methods, ":") + ":" + p.Path
}

// Resolution is the answer to phase one.
type Resolution struct {
	Physical Physical
	// For remote names: the file's attributes, or StatErr (ENOENT for a
	// name not created yet).
	Attr    *Attr
	StatErr error
	// Data is the whole file when Whole is set.
	Data  []byte
	Whole bool
}

// Opened describes a file the shadow opened.
type Opened struct {
	Handle uint64
	Attr   Attr
	Data   []byte // the file's first bytes, if asked for
	EOF    bool   // Data is the whole file
}

// Attr holds what stat(2) reports; times in nanoseconds since the epoch.
type Attr struct {
	Dev, Ino            uint64
	Mode                uint32 // type and permission bits
	Nlink, Uid, Gid     uint32
	Size, Blocks        uint64
	Atime, Mtime, Ctime int64
}

// SetAttr says which attributes to change. AtimeNow and MtimeNow set the
// submit machine's time (utimensat's UTIME_NOW, which asks only for write
// permission) instead of Atime and Mtime.
type SetAttr struct {
	Mode               *uint32
	Size               *uint64
	Atime, Mtime       *int64
	AtimeNow, MtimeNow bool
	Uid, Gid           *uint32
}

func (s SetAttr) empty() bool {
	return s.Mode == nil && s.Size == nil && s.Atime == nil && s.Mtime == nil && !s.AtimeNow && !s.MtimeNow &&
		s.Uid == nil && s.Gid == nil
}

// DirEntry is one name in a directory.
type DirEntry struct {
	Name string
	Mode uint32 // type bits
}

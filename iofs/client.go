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
	Write(ctx context.Context, handle uint64, off int64, data []byte) (int, error)
	Fstat(ctx context.Context, handle uint64) (Attr, error)
	Ftruncate(ctx context.Context, handle uint64, size int64) error
	Fsync(ctx context.Context, handle uint64) error
	Close(ctx context.Context, handle uint64) error
	SetAttr(ctx context.Context, path string, set SetAttr) (Attr, error)
	ReadDir(ctx context.Context, path string) ([]DirEntry, error)
	Mkdir(ctx context.Context, path string, mode uint32) (Attr, error)
	Unlink(ctx context.Context, path string) error
	Rmdir(ctx context.Context, path string) error
	Rename(ctx context.Context, oldPath, newPath string, flags uint32) error
	Symlink(ctx context.Context, target, path string) (Attr, error)
	Readlink(ctx context.Context, path string) (string, error)
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
	Ino                 uint64
	Mode                uint32 // type and permission bits
	Nlink, Uid, Gid     uint32
	Size, Blocks        uint64
	Atime, Mtime, Ctime int64
}

// SetAttr says which attributes to change.
type SetAttr struct {
	Mode         *uint32
	Size         *uint64
	Atime, Mtime *int64
}

// DirEntry is one name in a directory.
type DirEntry struct {
	Name string
	Mode uint32 // type bits
}

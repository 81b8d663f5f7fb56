package iofs

import (
	"bytes"
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// iofs serves the extended attributes of the user namespace ("user.*"),
// which are the job's to use, with the semantics of the file system that
// holds the file (the submit machine's, for remote files). The others
// (security.*, trusted.*, system.*) belong to the machines'
// administrators: reading one finds nothing (ENODATA), changing one is
// not supported (EOPNOTSUPP). The kernel asks for security.capability
// before writes; that question is answered without a round trip.

// xattrMax is Linux's largest attribute value and list (XATTR_SIZE_MAX).
const xattrMax = 64 << 10

func isUserXattr(name string) bool { return strings.HasPrefix(name, "user.") }

// userXattrs keeps the user.* names of a NUL-separated list.
func userXattrs(list []byte) []byte {
	var out []byte
	for name := range bytes.SplitSeq(list, []byte{0}) {
		if isUserXattr(string(name)) {
			out = append(append(out, name...), 0)
		}
	}
	return out
}

var (
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
)

// nameBackend returns the backend and physical name of the node itself.
func (n *node) nameBackend(ctx context.Context) (backend, Physical, error) {
	p, err := n.physical(ctx)
	if err != nil {
		return nil, Physical{}, err
	}
	be, err := n.fsys.backend(p)
	return be, p, err
}

// copyOut answers a getxattr or listxattr: with an empty dest the size
// only, ERANGE if dest is too small.
func copyOut(dest, val []byte) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return uint32(len(val)), 0
	}
	if len(dest) < len(val) {
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

func (n *node) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	if !isUserXattr(name) {
		return 0, syscall.ENODATA
	}
	be, p, err := n.nameBackend(ctx)
	if err != nil {
		return 0, toErrno(err)
	}
	val, err := be.getxattr(ctx, p.Path, name)
	if err != nil {
		return 0, toErrno(err)
	}
	return copyOut(dest, val)
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	be, p, err := n.nameBackend(ctx)
	if err != nil {
		return 0, toErrno(err)
	}
	list, err := be.listxattr(ctx, p.Path)
	if err != nil {
		return 0, toErrno(err)
	}
	return copyOut(dest, list)
}

func (n *node) Setxattr(ctx context.Context, name string, value []byte, flags uint32) syscall.Errno {
	if !isUserXattr(name) {
		return syscall.EOPNOTSUPP
	}
	be, p, err := n.nameBackend(ctx)
	if err != nil {
		return toErrno(err)
	}
	return toErrno(be.setxattr(ctx, p.Path, name, value, flags))
}

func (n *node) Removexattr(ctx context.Context, name string) syscall.Errno {
	if !isUserXattr(name) {
		return syscall.EOPNOTSUPP
	}
	be, p, err := n.nameBackend(ctx)
	if err != nil {
		return toErrno(err)
	}
	return toErrno(be.removexattr(ctx, p.Path, name))
}

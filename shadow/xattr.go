package shadow

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/wire"
)

// The I/O server serves the extended attributes of the user namespace
// only: the others (security.*, trusted.*, system.*) belong to the submit
// machine's administration, not to the job. Linux allows user attributes
// on regular files and directories only; on anything else the server
// answers as Linux does (ENODATA to read, EPERM to change) without asking.

const xattrUserPrefix = "user."

// xattrMax is Linux's largest attribute value (XATTR_SIZE_MAX) and list.
const xattrMax = 64 << 10

// xattrFile opens the file p names, not following a symbolic link it ends
// in, and reports whether it may carry user attributes. The caller closes
// fd.
func (s *IOServer) xattrFile(p string) (fd int, userOK bool, err error) {
	fd, err = s.open(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	t := st.Mode & unix.S_IFMT
	return fd, t == unix.S_IFREG || t == unix.S_IFDIR, nil
}

// procPath names the file an O_PATH descriptor is open on; the *xattr
// calls refuse O_PATH descriptors themselves.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

func (s *IOServer) Getxattr(_ context.Context, req *wire.XattrRequest) (*wire.XattrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(req.Name, xattrUserPrefix) {
		return &wire.XattrReply{Errno: uint32(syscall.EOPNOTSUPP)}, nil
	}
	fd, ok, err := s.xattrFile(req.Path)
	if err != nil {
		return &wire.XattrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(fd)
	if !ok {
		return &wire.XattrReply{Errno: uint32(syscall.ENODATA)}, nil
	}
	val, err := readXattr(func(buf []byte) (int, error) { return unix.Getxattr(procPath(fd), req.Name, buf) })
	return &wire.XattrReply{Errno: errno(err), Value: val}, nil
}

func (s *IOServer) Listxattr(_ context.Context, req *wire.XattrRequest) (*wire.XattrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	fd, ok, err := s.xattrFile(req.Path)
	if err != nil {
		return &wire.XattrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(fd)
	if !ok {
		return &wire.XattrReply{}, nil
	}
	list, err := readXattr(func(buf []byte) (int, error) { return unix.Listxattr(procPath(fd), buf) })
	if err != nil {
		return &wire.XattrReply{Errno: errno(err)}, nil
	}
	var user []byte
	for name := range bytes.SplitSeq(list, []byte{0}) {
		if bytes.HasPrefix(name, []byte(xattrUserPrefix)) {
			user = append(append(user, name...), 0)
		}
	}
	return &wire.XattrReply{Value: user}, nil
}

// readXattr calls get with a buffer large enough for its answer: a value
// may grow between asking its size and reading it.
func readXattr(get func([]byte) (int, error)) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := get(buf)
		if err == nil {
			return buf[:n], nil
		}
		if !errors.Is(err, syscall.ERANGE) || len(buf) >= xattrMax {
			return nil, err
		}
		buf = make([]byte, min(4*len(buf), xattrMax))
	}
}

func (s *IOServer) Setxattr(_ context.Context, req *wire.XattrRequest) (*wire.ErrnoReply, error) {
	return s.changeXattr(req, func(p string) error { return unix.Setxattr(p, req.Name, req.Value, int(req.Flags)) })
}

func (s *IOServer) Removexattr(_ context.Context, req *wire.XattrRequest) (*wire.ErrnoReply, error) {
	return s.changeXattr(req, func(p string) error { return unix.Removexattr(p, req.Name) })
}

func (s *IOServer) changeXattr(req *wire.XattrRequest, change func(path string) error) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(req.Name, xattrUserPrefix) {
		return &wire.ErrnoReply{Errno: uint32(syscall.EOPNOTSUPP)}, nil
	}
	if req.Flags&^uint32(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return &wire.ErrnoReply{Errno: uint32(syscall.EINVAL)}, nil
	}
	fd, ok, err := s.xattrFile(req.Path)
	if err != nil {
		return &wire.ErrnoReply{Errno: errno(err)}, nil
	}
	defer unix.Close(fd)
	if !ok {
		return &wire.ErrnoReply{Errno: uint32(syscall.EPERM)}, nil
	}
	return &wire.ErrnoReply{Errno: errno(change(procPath(fd)))}, nil
}

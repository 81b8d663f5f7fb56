package iofs

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// DefaultLease is how long I/O waits for an unreachable shadow before the
// job sees EIO.
const DefaultLease = 20 * time.Minute

// shadowClient is Client over the shadow's ShadowIO gRPC service.
type shadowClient struct {
	conn   grpc.ClientConnInterface
	rpc    wire.ShadowIOClient
	secret string
	lease  time.Duration
}

// NewShadowClient returns a Client that talks to the shadow over conn (a
// mutual-TLS connection, see wire.Dial) and presents the job's secret.
// While the shadow cannot be reached a call waits and retries, for at most
// lease (DefaultLease if zero); calls that were in flight during an outage
// are repeated, so a mkdir, unlink or rename may report EEXIST or ENOENT
// for its own earlier success.
func NewShadowClient(conn grpc.ClientConnInterface, secret string, lease time.Duration) Client {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &shadowClient{conn: conn, rpc: wire.NewShadowIOClient(conn), secret: secret, lease: lease}
}

// call runs one RPC, waiting out transport failures within the lease.
//
// A request the kernel interrupts (the job got a signal) is not abandoned:
// the Go runtime alone signals its threads all the time, and programs do
// not expect EINTR from file operations. A job killed while it waits is
// released by the kernel without an answer.
func call[Req, Rep any](ctx context.Context, c *shadowClient, f func(context.Context, Req, ...grpc.CallOption) (Rep, error), req Req) (Rep, error) {
	return callIn(context.WithoutCancel(ctx), c, f, req)
}

// callIn is call ended by ctx, too.
func callIn[Req, Rep any](ctx context.Context, c *shadowClient, f func(context.Context, Req, ...grpc.CallOption) (Rep, error), req Req) (Rep, error) {
	ctx, cancel := context.WithTimeout(ctx, c.lease)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		rep, err := f(ctx, req, grpc.WaitForReady(true))
		if err == nil {
			return rep, nil
		}
		code := status.Code(err)
		if code != codes.Unavailable || ctx.Err() != nil {
			var zero Rep
			if code == codes.PermissionDenied {
				return zero, fmt.Errorf("shadow refused: %w", syscall.EACCES)
			}
			return zero, fmt.Errorf("shadow I/O: %v: %w", err, syscall.EIO)
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
			delay = min(2*delay, 2*time.Second)
		}
	}
}

// errnoErr turns a reply's errno into an error.
func errnoErr(e uint32) error {
	if e == 0 {
		return nil
	}
	return syscall.Errno(e)
}

func attrFrom(a *wire.Attr) Attr {
	if a == nil {
		return Attr{}
	}
	return Attr{Dev: a.Dev, Ino: a.Ino, Mode: a.Mode, Nlink: a.Nlink, Uid: a.Uid, Gid: a.Gid, Size: a.Size, Blocks: a.Blocks,
		Atime: a.AtimeNs, Mtime: a.MtimeNs, Ctime: a.CtimeNs}
}

func (c *shadowClient) Resolve(ctx context.Context, name string, prefetch int) (Resolution, error) {
	rep, err := call(ctx, c, c.rpc.Resolve, &wire.ResolveRequest{Secret: c.secret, Name: name, Prefetch: uint32(prefetch)})
	if err != nil {
		return Resolution{}, err
	}
	if err := errnoErr(rep.Errno); err != nil {
		return Resolution{}, err
	}
	if len(rep.Methods) == 0 {
		return Resolution{}, fmt.Errorf("resolve %s: no method: %w", name, syscall.EIO)
	}
	r := Resolution{Physical: Physical{Methods: rep.Methods, Path: rep.Path, BufferSize: rep.BufferSize, BufferBlockSize: rep.BufferBlockSize},
		Data: rep.Data, Whole: rep.Whole}
	if r.StatErr = errnoErr(rep.StatErrno); r.StatErr == nil && rep.Attr != nil {
		a := attrFrom(rep.Attr)
		r.Attr = &a
	}
	return r, nil
}

func (c *shadowClient) Stat(ctx context.Context, path string) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Stat, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Open(ctx context.Context, path string, flags, mode uint32, prefetch int) (Opened, error) {
	rep, err := call(ctx, c, c.rpc.Open, &wire.OpenRequest{Secret: c.secret, Path: path, Flags: flags, Mode: mode, Prefetch: uint32(prefetch)})
	if err != nil {
		return Opened{}, err
	}
	if err := errnoErr(rep.Errno); err != nil {
		return Opened{}, err
	}
	return Opened{Handle: rep.Handle, Attr: attrFrom(rep.Attr), Data: rep.Data, EOF: rep.Eof}, nil
}

func (c *shadowClient) Reopen(ctx context.Context, h uint64, flags uint32) (Opened, error) {
	rep, err := call(ctx, c, c.rpc.Reopen, &wire.ReopenRequest{Secret: c.secret, Handle: h, Flags: flags})
	if err != nil {
		return Opened{}, err
	}
	if err := errnoErr(rep.Errno); err != nil {
		return Opened{}, err
	}
	return Opened{Handle: rep.Handle, Attr: attrFrom(rep.Attr)}, nil
}

// Read has the reply's data decoded straight into dest (see wire's codec),
// which is the FUSE request's own reply buffer.
func (c *shadowClient) Read(ctx context.Context, h uint64, off int64, dest []byte) ([]byte, error) {
	read := func(ctx context.Context, req *wire.ReadRequest, opts ...grpc.CallOption) (*wire.ReadReply, error) {
		rep := &wire.ReadReply{Data: dest[:0]}
		return rep, c.conn.Invoke(ctx, wire.ShadowIO_Read_FullMethodName, req, rep, opts...)
	}
	rep, err := call(ctx, c, read, &wire.ReadRequest{Secret: c.secret, Handle: h, Offset: off, Size: uint32(len(dest))})
	if err != nil {
		return nil, err
	}
	return rep.Data, errnoErr(rep.Errno)
}

func (c *shadowClient) Write(ctx context.Context, h uint64, w Writes) (int, error) {
	req := &wire.WriteRequest{Secret: c.secret, Handle: h, Offset: w.Offset, Data: w.Data,
		Extents: w.Extents, Sync: wire.Sync(w.Sync)}
	if w.Mtime != nil {
		req.SetMtime, req.MtimeNs = true, *w.Mtime
	}
	rep, err := call(ctx, c, c.rpc.Write, req)
	if err != nil {
		return 0, err
	}
	return int(rep.Written), errnoErr(rep.Errno)
}

func (c *shadowClient) Fstat(ctx context.Context, h uint64) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Fstat, &wire.HandleRequest{Secret: c.secret, Handle: h})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Ftruncate(ctx context.Context, h uint64, size int64) error {
	rep, err := call(ctx, c, c.rpc.Ftruncate, &wire.TruncateRequest{Secret: c.secret, Handle: h, Size: uint64(size)})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Fallocate(ctx context.Context, h uint64, mode uint32, off, length int64) error {
	rep, err := call(ctx, c, c.rpc.Fallocate, &wire.FallocateRequest{Secret: c.secret, Handle: h, Mode: mode, Offset: off, Length: length})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

// Fsync waiting for writes ends with ctx: its writes may have failed on
// their way, and then it waits for nothing.
func (c *shadowClient) Fsync(ctx context.Context, h uint64, afterWrites uint64, dataOnly bool) error {
	do := call[*wire.FsyncRequest, *wire.ErrnoReply]
	if afterWrites > 0 {
		do = callIn[*wire.FsyncRequest, *wire.ErrnoReply]
	}
	rep, err := do(ctx, c, c.rpc.Fsync, &wire.FsyncRequest{Secret: c.secret, Handle: h, AfterWrites: afterWrites, DataOnly: dataOnly})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Close(ctx context.Context, h uint64) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Close, &wire.HandleRequest{Secret: c.secret, Handle: h})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) SetAttr(ctx context.Context, path string, set SetAttr) (Attr, error) {
	return c.setAttr(ctx, &wire.SetAttrRequest{Secret: c.secret, Path: path}, set)
}

func (c *shadowClient) SetAttrHandle(ctx context.Context, h uint64, set SetAttr) (Attr, error) {
	return c.setAttr(ctx, &wire.SetAttrRequest{Secret: c.secret, Handle: h}, set)
}

func (c *shadowClient) setAttr(ctx context.Context, req *wire.SetAttrRequest, set SetAttr) (Attr, error) {
	if set.Mode != nil {
		req.SetMode, req.Mode = true, *set.Mode
	}
	if set.Size != nil {
		req.SetSize, req.Size = true, *set.Size
	}
	if set.Atime != nil {
		req.SetAtime, req.AtimeNs = true, *set.Atime
	}
	if set.Mtime != nil {
		req.SetMtime, req.MtimeNs = true, *set.Mtime
	}
	req.SetAtime, req.AtimeNow = req.SetAtime || set.AtimeNow, set.AtimeNow
	req.SetMtime, req.MtimeNow = req.SetMtime || set.MtimeNow, set.MtimeNow
	if set.Uid != nil {
		req.SetUid, req.Uid = true, *set.Uid
	}
	if set.Gid != nil {
		req.SetGid, req.Gid = true, *set.Gid
	}
	rep, err := call(ctx, c, c.rpc.SetAttr, req)
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) ReadDir(ctx context.Context, path string) ([]DirEntry, error) {
	rep, err := call(ctx, c, c.rpc.ReadDir, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return nil, err
	}
	if err := errnoErr(rep.Errno); err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(rep.Entries))
	for i, e := range rep.Entries {
		out[i] = DirEntry{Name: e.Name, Mode: e.Mode}
	}
	return out, nil
}

func (c *shadowClient) Mkdir(ctx context.Context, path string, mode uint32) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Mkdir, &wire.MkdirRequest{Secret: c.secret, Path: path, Mode: mode})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Unlink(ctx context.Context, path string) error {
	rep, err := call(ctx, c, c.rpc.Unlink, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Rmdir(ctx context.Context, path string) error {
	rep, err := call(ctx, c, c.rpc.Rmdir, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Rename(ctx context.Context, oldPath, newPath string, flags uint32) error {
	rep, err := call(ctx, c, c.rpc.Rename, &wire.RenameRequest{Secret: c.secret, OldPath: oldPath, NewPath: newPath, Flags: flags})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Symlink(ctx context.Context, target, path string) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Symlink, &wire.SymlinkRequest{Secret: c.secret, Target: target, Path: path})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Readlink(ctx context.Context, path string) (string, error) {
	rep, err := call(ctx, c, c.rpc.Readlink, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return "", err
	}
	return rep.Target, errnoErr(rep.Errno)
}

func (c *shadowClient) Link(ctx context.Context, oldPath, newPath string) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Link, &wire.LinkRequest{Secret: c.secret, OldPath: oldPath, NewPath: newPath})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Mknod(ctx context.Context, path string, mode uint32) (Attr, error) {
	rep, err := call(ctx, c, c.rpc.Mknod, &wire.MknodRequest{Secret: c.secret, Path: path, Mode: mode})
	if err != nil {
		return Attr{}, err
	}
	return attrFrom(rep.Attr), errnoErr(rep.Errno)
}

func (c *shadowClient) Getxattr(ctx context.Context, path, name string) ([]byte, error) {
	rep, err := call(ctx, c, c.rpc.Getxattr, &wire.XattrRequest{Secret: c.secret, Path: path, Name: name})
	if err != nil {
		return nil, err
	}
	return rep.Value, errnoErr(rep.Errno)
}

func (c *shadowClient) Listxattr(ctx context.Context, path string) ([]byte, error) {
	rep, err := call(ctx, c, c.rpc.Listxattr, &wire.XattrRequest{Secret: c.secret, Path: path})
	if err != nil {
		return nil, err
	}
	return rep.Value, errnoErr(rep.Errno)
}

func (c *shadowClient) Setxattr(ctx context.Context, path, name string, value []byte, flags uint32) error {
	rep, err := call(ctx, c, c.rpc.Setxattr, &wire.XattrRequest{Secret: c.secret, Path: path, Name: name, Value: value, Flags: flags})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Removexattr(ctx context.Context, path, name string) error {
	rep, err := call(ctx, c, c.rpc.Removexattr, &wire.XattrRequest{Secret: c.secret, Path: path, Name: name})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) SyncDir(ctx context.Context, path string) error {
	rep, err := call(ctx, c, c.rpc.SyncDir, &wire.PathRequest{Secret: c.secret, Path: path})
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

func (c *shadowClient) Account(ctx context.Context, uses []FileUse) error {
	req := &wire.AccountRequest{Secret: c.secret, Files: make([]*wire.FileUse, len(uses))}
	for i, u := range uses {
		req.Files[i] = &wire.FileUse{Path: u.Path, Opens: u.Opens, Reads: u.Reads, BytesRead: u.BytesRead}
	}
	rep, err := call(ctx, c, c.rpc.Account, req)
	if err != nil {
		return err
	}
	return errnoErr(rep.Errno)
}

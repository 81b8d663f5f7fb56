package shadow

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// IOServer is the shadow's remote I/O service (wire.ShadowIOServer): it
// answers iofs's two-phase opens from the job's Mapping and then performs
// the job's file operations on the submit machine.
//
// It touches only the job's initial directory and the remote targets of its
// remaps. Every name is resolved beneath one of these roots with openat2
// RESOLVE_BENEATH, so "..", absolute symbolic links and links that climb out
// fail (EACCES) instead of escaping; the operating system adds its own
// checks, since the shadow runs as the job's owner.
type IOServer struct {
	wire.UnimplementedShadowIOServer
	secret string

	mapping atomic.Pointer[ioMapping]

	mu      sync.Mutex // guards handles, next and stats
	handles map[uint64]*ioHandle
	next    uint64
	stats   map[string]*fileCounters

	// buffers lends Read its buffers if the server was built with
	// ServerOption (lending set); otherwise each read has its own. The
	// server's codec lends Write the buffer of its data.
	buffers *wire.Buffers
	lending atomic.Bool
}

type ioMapping struct {
	*Mapping
	roots []string
}

type ioHandle struct {
	fd    int
	count *fileCounters
	pos   seekCounter

	// writes counts the Writes made through the handle, for an fsync
	// that waits for those sent before it; wrote, if not nil, is closed
	// at the next.
	mu     sync.Mutex
	writes uint64
	wrote  chan struct{}
}

// made counts a Write made through the handle.
func (h *ioHandle) made() {
	h.mu.Lock()
	h.writes++
	if h.wrote != nil {
		close(h.wrote)
		h.wrote = nil
	}
	h.mu.Unlock()
}

// awaitWrites waits until n Writes were made through the handle.
func (h *ioHandle) awaitWrites(ctx context.Context, n uint64) error {
	for {
		h.mu.Lock()
		if h.writes >= n {
			h.mu.Unlock()
			return nil
		}
		if h.wrote == nil {
			h.wrote = make(chan struct{})
		}
		wrote := h.wrote
		h.mu.Unlock()
		select {
		case <-wrote:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fileCounters are updated without the server's lock.
type fileCounters struct {
	opens, reads, writes, seeks, bytesRead, bytesWritten, nanos atomic.Int64
}

// countPrefetch counts the n bytes sent with a lookup or an open as a
// read, if there were any.
func (c *fileCounters) countPrefetch(n int) {
	if n > 0 {
		c.reads.Add(1)
		c.bytesRead.Add(int64(n))
	}
}

// seekCounter counts the seeks on one open file. The shadow sees no lseek,
// only where each read and write starts: one that starts where no recent
// access on the file ended is a seek. The kernel's read-ahead sends several
// reads at once and they may arrive out of order, so an access that ends
// where a counted seek started turns that seek back into a continuation:
// sequential I/O counts no seek in whatever order it arrives.
type seekCounter struct {
	mu     sync.Mutex
	recent [16]access // a ring; the file starts at offset 0
	next   int
}

type access struct {
	start, end int64
	seek       bool
}

// add records an access of n bytes at off and returns the change in the
// file's count of seeks.
func (c *seekCounter) add(off int64, n int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := access{start: off, end: off + int64(n), seek: true}
	var delta int64
	for i := range c.recent {
		r := &c.recent[i]
		if r.end == a.start {
			a.seek = false
		}
		if r.seek && r.start == a.end && n > 0 {
			r.seek = false
			delta--
		}
	}
	if a.seek {
		delta++
	}
	c.recent[c.next] = a
	c.next = (c.next + 1) % len(c.recent)
	return delta
}

// FileStats is what the I/O server counted for one submit-side file.
type FileStats struct {
	Path string `json:"path"`
	// Opens counts the job's opens: those the shadow made for it, and
	// those of small files that came whole with a lookup, which iofs
	// accounts for. A lookup alone counts nothing: the kernel looks names
	// up for stat, ls and path walks too.
	Opens int64 `json:"opens"`
	// Reads counts the reads served, and the opens that brought data
	// along (one read each).
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"` // write calls
	// Seeks counts the reads and writes that did not continue where an
	// earlier one on the same open file ended (see seekCounter).
	Seeks        int64 `json:"seeks"`
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// Time is spent opening, reading, writing and syncing the file.
	Time time.Duration `json:"time"`
}

// NewIOServer serves the job whose mapping is m to callers that present
// secret.
func NewIOServer(m *Mapping, secret string) *IOServer {
	s := &IOServer{secret: secret, handles: map[uint64]*ioHandle{}, stats: map[string]*fileCounters{}, buffers: wire.NewBuffers()}
	s.SetMapping(m)
	return s
}

// ServerOption returns the option of the gRPC server that serves s with
// which reads reuse their buffers once their replies are sent.
func (s *IOServer) ServerOption() grpc.ServerOption {
	s.lending.Store(true)
	return s.buffers.ServerOption()
}

// lendFrom makes s take its read buffers from b, which the codec of the
// gRPC server that serves s must lend (b.ServerOption).
func (s *IOServer) lendFrom(b *wire.Buffers) {
	s.buffers = b
	s.lending.Store(true)
}

// readBuffer returns a buffer of n bytes for a Read's data.
func (s *IOServer) readBuffer(n int) []byte {
	if s.lending.Load() {
		return s.buffers.Get(n)
	}
	return make([]byte, n)
}

// newJobIOServer is the I/O service of the shadow's own job. A job ad with
// malformed mapping entries still runs, with the well-formed rest.
func newJobIOServer(s *Shadow) *IOServer {
	m, err := NewMapping(s.job)
	if err != nil {
		s.logger.Warn("job file mapping", "err", err)
	}
	if m == nil {
		m = &Mapping{iwd: "/nonexistent"}
	}
	return NewIOServer(m, s.secret)
}

// SetMapping replaces the job's mapping; later opens follow the new one,
// files already open stay as they are.
func (s *IOServer) SetMapping(m *Mapping) {
	s.mapping.Store(&ioMapping{Mapping: m, roots: m.roots()})
}

// Stats returns the per-file statistics so far, ordered by path.
func (s *IOServer) Stats() []FileStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FileStats, 0, len(s.stats))
	for p, c := range s.stats {
		out = append(out, FileStats{Path: p, Opens: c.opens.Load(), Reads: c.reads.Load(), Writes: c.writes.Load(), Seeks: c.seeks.Load(),
			BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(), Time: time.Duration(c.nanos.Load())})
	}
	slices.SortFunc(out, func(a, b FileStats) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// CloseFiles closes every file the job left open.
func (s *IOServer) CloseFiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, h := range s.handles {
		unix.Close(h.fd)
		delete(s.handles, id)
	}
}

var errPermission = status.Error(codes.PermissionDenied, errBadSecret.Error())

func (s *IOServer) auth(secret string) error {
	if subtle.ConstantTimeCompare([]byte(secret), []byte(s.secret)) != 1 {
		return errPermission
	}
	return nil
}

// errno extracts the errno to send back; anything else is EIO.
func errno(err error) uint32 {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return uint32(e)
	}
	return uint32(syscall.EIO)
}

// where finds the root a physical path lies in and the path relative to it
// ("." for the root itself).
func (s *IOServer) where(p string) (root, rel string, err error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", "", syscall.EINVAL
	}
	for _, r := range s.mapping.Load().roots {
		if p == r {
			return r, ".", nil
		}
		if rest, ok := strings.CutPrefix(p, r+"/"); ok {
			return r, rest, nil
		}
	}
	return "", "", syscall.EACCES
}

// open opens p beneath its root. Symbolic links are followed only while
// they stay beneath it.
func (s *IOServer) open(p string, flags int, mode uint32) (int, error) {
	root, rel, err := s.where(p)
	if err != nil {
		return -1, err
	}
	flags |= unix.O_CLOEXEC
	if rel == "." {
		// The root itself was named by the job's owner; follow it.
		return unix.Open(root, flags&^unix.O_NOFOLLOW, mode)
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode & 0o7777)
	}
	fd, err := unix.Openat2(rfd, rel, how)
	if errors.Is(err, unix.EXDEV) {
		// openat2's answer to an escape attempt.
		return -1, syscall.EACCES
	}
	return fd, err
}

// parent opens the directory that holds p, for operations on the name
// itself (mkdir, unlink, rename, symlink).
func (s *IOServer) parent(p string) (dirfd int, base string, err error) {
	root, rel, err := s.where(p)
	if err != nil {
		return -1, "", err
	}
	if rel == "." {
		if root == s.mapping.Load().iwd {
			return -1, "", syscall.EBUSY
		}
		fd, err := unix.Open(filepath.Dir(root), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return fd, filepath.Base(root), err
	}
	fd, err := s.open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, filepath.Base(p), err
}

func (s *IOServer) lstat(p string) (*wire.Attr, error) {
	fd, err := s.open(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return fstat(fd)
}

func fstat(fd int) (*wire.Attr, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	return attrOf(&st), nil
}

func statAt(dirfd int, base string) (*wire.Attr, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return attrOf(&st), nil
}

func attrOf(st *unix.Stat_t) *wire.Attr {
	return &wire.Attr{
		Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: uint32(st.Nlink), Uid: st.Uid, Gid: st.Gid,
		Size: uint64(st.Size), Blocks: uint64(st.Blocks),
		AtimeNs: st.Atim.Nano(), MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

func (s *IOServer) counters(p string) *fileCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.stats[p]
	if c == nil {
		c = &fileCounters{}
		s.stats[p] = c
	}
	return c
}

func (s *IOServer) handle(id uint64) (*ioHandle, error) {
	s.mu.Lock()
	h := s.handles[id]
	s.mu.Unlock()
	if h == nil {
		// The client reopens by name: a restarted shadow forgot the handle.
		return nil, syscall.ESTALE
	}
	return h, nil
}

// Resolve is phase one of the two-phase open.
func (s *IOServer) Resolve(_ context.Context, req *wire.ResolveRequest) (*wire.ResolveReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	phys, err := s.mapping.Load().Resolve(req.Name)
	if err != nil {
		return &wire.ResolveReply{Errno: uint32(syscall.EACCES)}, nil
	}
	rep := &wire.ResolveReply{Physical: phys.String(), Methods: phys.Methods, Path: phys.Path,
		BufferSize: phys.BufferSize, BufferBlockSize: phys.BufferBlockSize}
	if phys.Base() == methodRemote {
		rep.Attr, err = s.lstat(phys.Path)
		rep.StatErrno = errno(err)
		if err == nil && rep.Attr.Mode&unix.S_IFMT == unix.S_IFREG && rep.Attr.Size <= uint64(req.Prefetch) {
			rep.Data, rep.Whole = s.readSmall(phys.Path, int(req.Prefetch))
		}
	}
	return rep, nil
}

// readSmall reads a small file whole, if it is still small. It counts
// nothing: a lookup is not the job's doing (the kernel looks names up for
// stat, ls and path walks too); iofs accounts the open and the read if the
// job opens the file (Account).
func (s *IOServer) readSmall(p string, limit int) ([]byte, bool) {
	fd, err := s.open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	buf := make([]byte, limit+1)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || n > limit {
		return nil, false
	}
	return buf[:n], true
}

func (s *IOServer) Stat(_ context.Context, req *wire.PathRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	a, err := s.lstat(req.Path)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

// Open opens a physical file. Only regular files and directories are
// served; O_NONBLOCK keeps a FIFO from holding the server up.
func (s *IOServer) Open(_ context.Context, req *wire.OpenRequest) (*wire.OpenReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	start := time.Now()
	flags := int(req.Flags) & (unix.O_ACCMODE | unix.O_APPEND | unix.O_TRUNC | unix.O_CREAT | unix.O_EXCL | unix.O_DIRECTORY)
	fd, err := s.open(req.Path, flags|unix.O_NONBLOCK|unix.O_NOCTTY, req.Mode)
	if err != nil {
		return &wire.OpenReply{Errno: errno(err)}, nil
	}
	a, err := fstat(fd)
	if err == nil && a.Mode&unix.S_IFMT != unix.S_IFREG && a.Mode&unix.S_IFMT != unix.S_IFDIR {
		err = syscall.EPERM
	}
	if err != nil {
		unix.Close(fd)
		return &wire.OpenReply{Errno: errno(err)}, nil
	}
	c := s.counters(req.Path)
	c.opens.Add(1)
	h := &ioHandle{fd: fd, count: c}
	rep := &wire.OpenReply{Attr: a}
	if req.Prefetch > 0 && flags&unix.O_ACCMODE != unix.O_WRONLY && a.Mode&unix.S_IFMT == unix.S_IFREG {
		buf := make([]byte, min(int64(req.Prefetch), int64(a.Size)+1))
		n, err := unix.Pread(fd, buf, 0)
		if err == nil {
			rep.Data, rep.Eof = buf[:n], n < len(buf)
			c.countPrefetch(n)
			h.pos.add(0, n)
		}
	}
	if rep.Eof && flags&unix.O_ACCMODE == unix.O_RDONLY {
		unix.Close(fd)
	} else {
		s.mu.Lock()
		s.next++
		rep.Handle = s.next
		s.handles[rep.Handle] = h
		s.mu.Unlock()
	}
	c.nanos.Add(int64(time.Since(start)))
	return rep, nil
}

// Reopen opens the file behind a handle again through /proc/self/fd; the
// name may be gone.
func (s *IOServer) Reopen(_ context.Context, req *wire.ReopenRequest) (*wire.OpenReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err != nil {
		return &wire.OpenReply{Errno: errno(err)}, nil
	}
	flags := int(req.Flags) & (unix.O_ACCMODE | unix.O_APPEND)
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(h.fd), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return &wire.OpenReply{Errno: errno(err)}, nil
	}
	a, err := fstat(fd)
	if err != nil {
		unix.Close(fd)
		return &wire.OpenReply{Errno: errno(err)}, nil
	}
	h.count.opens.Add(1)
	s.mu.Lock()
	s.next++
	id := s.next
	s.handles[id] = &ioHandle{fd: fd, count: h.count}
	s.mu.Unlock()
	return &wire.OpenReply{Handle: id, Attr: a}, nil
}

func (s *IOServer) Read(_ context.Context, req *wire.ReadRequest) (*wire.ReadReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err != nil {
		return &wire.ReadReply{Errno: errno(err)}, nil
	}
	start := time.Now()
	buf := s.readBuffer(int(min(req.Size, wire.MaxMessage/2)))
	n, err := unix.Pread(h.fd, buf, req.Offset)
	if err != nil {
		s.buffers.Put(buf)
		return &wire.ReadReply{Errno: errno(err)}, nil
	}
	h.count.reads.Add(1)
	h.count.bytesRead.Add(int64(n))
	h.count.seeks.Add(h.pos.add(req.Offset, n))
	h.count.nanos.Add(int64(time.Since(start)))
	return &wire.ReadReply{Data: buf[:n]}, nil
}

// Write writes the request's pieces in order, then sets the modification
// time and syncs if asked; on a file opened O_APPEND, Linux's pwrite
// appends, which is what the append method wants. Each piece counts as
// one write.
func (s *IOServer) Write(_ context.Context, req *wire.WriteRequest) (*wire.WriteReply, error) {
	defer s.buffers.Put(req.Data) // if the codec lent it
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err != nil {
		return &wire.WriteReply{Errno: errno(err)}, nil
	}
	defer h.made() // after the write, and also if it failed
	if !validExtents(req.Extents, len(req.Data)) {
		return &wire.WriteReply{Errno: uint32(syscall.EINVAL)}, nil
	}
	start := time.Now()
	defer func() { h.count.nanos.Add(int64(time.Since(start))) }()
	written := 0
	piece := func(off int64, n int) error {
		data := req.Data[written : written+n]
		for len(data) > 0 {
			k, err := unix.Pwrite(h.fd, data, off)
			if err != nil {
				return err
			}
			data, off, written = data[k:], off+int64(k), written+k
		}
		h.count.writes.Add(1)
		h.count.bytesWritten.Add(int64(n))
		h.count.seeks.Add(h.pos.add(off-int64(n), n))
		return nil
	}
	if len(req.Extents) == 0 && len(req.Data) > 0 { // not a batch of a time alone
		err = piece(req.Offset, len(req.Data))
	}
	for i := 0; i < len(req.Extents) && err == nil; i += 2 {
		err = piece(req.Extents[i], int(req.Extents[i+1]))
	}
	if err == nil && req.SetMtime {
		// Only an owner may set a time other than now: for a file the
		// job may write but not own, the time the writes gave it stays,
		// as it would for the same writes made on this machine.
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(req.MtimeNs)}
		if terr := unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(h.fd), ts, 0); terr != nil &&
			!errors.Is(terr, unix.EPERM) && !errors.Is(terr, unix.EACCES) {
			err = terr
		}
	}
	if err == nil {
		switch req.Sync {
		case wire.Sync_SYNC_DATA:
			err = unix.Fdatasync(h.fd)
		case wire.Sync_SYNC_ALL:
			err = unix.Fsync(h.fd)
		}
	}
	return &wire.WriteReply{Errno: errno(err), Written: uint32(written)}, nil
}

// validExtents reports whether extents are (offset, length) pairs whose
// lengths cover n bytes exactly; none at all is one piece of n.
func validExtents(extents []int64, n int) bool {
	if len(extents)%2 != 0 {
		return false
	}
	sum := int64(0)
	for i := 0; i < len(extents); i += 2 {
		if extents[i] < 0 || extents[i+1] < 0 || extents[i+1] > int64(n) {
			return false
		}
		sum += extents[i+1]
	}
	return len(extents) == 0 || sum == int64(n)
}

func (s *IOServer) Fstat(_ context.Context, req *wire.HandleRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := fstat(h.fd)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

func (s *IOServer) Ftruncate(_ context.Context, req *wire.TruncateRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err == nil {
		err = unix.Ftruncate(h.fd, int64(req.Size))
	}
	return &wire.ErrnoReply{Errno: errno(err)}, nil
}

func (s *IOServer) Fallocate(_ context.Context, req *wire.FallocateRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err == nil {
		err = unix.Fallocate(h.fd, req.Mode, req.Offset, req.Length)
	}
	return &wire.ErrnoReply{Errno: errno(err)}, nil
}

// Fsync makes the file durable, once the Writes its client sent before
// it are made (they may still be on their way: see FsyncRequest).
func (s *IOServer) Fsync(ctx context.Context, req *wire.FsyncRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	h, err := s.handle(req.Handle)
	if err == nil && req.AfterWrites > 0 {
		if err := h.awaitWrites(ctx, req.AfterWrites); err != nil {
			return nil, status.FromContextError(err).Err()
		}
	}
	if err == nil {
		start := time.Now()
		if req.DataOnly {
			err = unix.Fdatasync(h.fd)
		} else {
			err = unix.Fsync(h.fd)
		}
		h.count.nanos.Add(int64(time.Since(start)))
	}
	return &wire.ErrnoReply{Errno: errno(err)}, nil
}

// Close closes a handle and returns the file's attributes as the job left
// them.
func (s *IOServer) Close(_ context.Context, req *wire.HandleRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	s.mu.Lock()
	h := s.handles[req.Handle]
	delete(s.handles, req.Handle)
	s.mu.Unlock()
	if h == nil {
		return &wire.AttrReply{Errno: uint32(syscall.EBADF)}, nil
	}
	a, _ := fstat(h.fd)
	return &wire.AttrReply{Errno: errno(unix.Close(h.fd)), Attr: a}, nil
}

// SetAttr changes owner, mode, size and times of an open file, or of the
// file a path names, through an O_PATH descriptor resolved beneath the
// root: a symbolic link cannot redirect it, and one the path ends in is
// changed itself (its owner and times; it has no mode or size of its own).
func (s *IOServer) SetAttr(_ context.Context, req *wire.SetAttrRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	var fd int
	if req.Handle != 0 {
		h, err := s.handle(req.Handle)
		if err != nil {
			return &wire.AttrReply{Errno: errno(err)}, nil
		}
		fd = h.fd
	} else {
		var err error
		if fd, err = s.open(req.Path, unix.O_PATH|unix.O_NOFOLLOW, 0); err != nil {
			return &wire.AttrReply{Errno: errno(err)}, nil
		}
		defer unix.Close(fd)
	}
	if err := s.setAttr(fd, req); err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := fstat(fd)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

// setAttr applies req to the file fd is open on (or, O_PATH, names).
func (s *IOServer) setAttr(fd int, req *wire.SetAttrRequest) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	// Through /proc the descriptor's own file is reached, also for O_PATH
	// descriptors, which fchmod and futimens refuse.
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	if req.SetUid || req.SetGid {
		uid, gid := -1, -1
		if req.SetUid {
			uid = int(req.Uid)
		}
		if req.SetGid {
			gid = int(req.Gid)
		}
		if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	if req.SetMode {
		if link {
			return syscall.EOPNOTSUPP // as fchmodat(AT_SYMLINK_NOFOLLOW)
		}
		if err := unix.Fchmodat(unix.AT_FDCWD, proc, req.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	if req.SetSize {
		if link {
			return syscall.EINVAL
		}
		if err := unix.Truncate(proc, int64(req.Size)); err != nil {
			return err
		}
	}
	if !req.SetAtime && !req.SetMtime {
		return nil
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	switch {
	case req.AtimeNow:
		ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
	case req.SetAtime:
		ts[0] = unix.NsecToTimespec(req.AtimeNs)
	}
	switch {
	case req.MtimeNow:
		ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
	case req.SetMtime:
		ts[1] = unix.NsecToTimespec(req.MtimeNs)
	}
	if !link {
		return unix.UtimesNanoAt(unix.AT_FDCWD, proc, ts, 0)
	}
	// A link's own times: by its name in its directory, not followed.
	dirfd, base, err := s.parent(req.Path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	return unix.UtimesNanoAt(dirfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func (s *IOServer) ReadDir(_ context.Context, req *wire.PathRequest) (*wire.ReadDirReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	fd, err := s.open(req.Path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return &wire.ReadDirReply{Errno: errno(err)}, nil
	}
	f := os.NewFile(uintptr(fd), req.Path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return &wire.ReadDirReply{Errno: errno(err)}, nil
	}
	rep := &wire.ReadDirReply{Entries: make([]*wire.DirEntry, len(ents))}
	for i, e := range ents {
		rep.Entries[i] = &wire.DirEntry{Name: e.Name(), Mode: modeType(e.Type())}
	}
	return rep, nil
}

// modeType converts Go's file type bits to st_mode's.
func modeType(m os.FileMode) uint32 {
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

func (s *IOServer) Mkdir(_ context.Context, req *wire.MkdirRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	dirfd, base, err := s.parent(req.Path)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, base, req.Mode&0o7777); err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := statAt(dirfd, base)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

func (s *IOServer) Unlink(_ context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	return s.remove(req, 0)
}

func (s *IOServer) Rmdir(_ context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	return s.remove(req, unix.AT_REMOVEDIR)
}

func (s *IOServer) remove(req *wire.PathRequest, flags int) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	dirfd, base, err := s.parent(req.Path)
	if err != nil {
		return &wire.ErrnoReply{Errno: errno(err)}, nil
	}
	defer unix.Close(dirfd)
	return &wire.ErrnoReply{Errno: errno(unix.Unlinkat(dirfd, base, flags))}, nil
}

func (s *IOServer) Rename(_ context.Context, req *wire.RenameRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	od, ob, err := s.parent(req.OldPath)
	if err != nil {
		return &wire.ErrnoReply{Errno: errno(err)}, nil
	}
	defer unix.Close(od)
	nd, nb, err := s.parent(req.NewPath)
	if err != nil {
		return &wire.ErrnoReply{Errno: errno(err)}, nil
	}
	defer unix.Close(nd)
	return &wire.ErrnoReply{Errno: errno(unix.Renameat2(od, ob, nd, nb, uint(req.Flags)))}, nil
}

// Symlink creates a link with any target: following it is what is
// checked, not making it.
func (s *IOServer) Symlink(_ context.Context, req *wire.SymlinkRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	dirfd, base, err := s.parent(req.Path)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(dirfd)
	if err := unix.Symlinkat(req.Target, dirfd, base); err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := statAt(dirfd, base)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

func (s *IOServer) Readlink(_ context.Context, req *wire.PathRequest) (*wire.ReadlinkReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	fd, err := s.open(req.Path, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return &wire.ReadlinkReply{Errno: errno(err)}, nil
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return &wire.ReadlinkReply{Errno: errno(err)}, nil
	}
	return &wire.ReadlinkReply{Target: string(buf[:n])}, nil
}

// Link makes another name for a file. Neither name's last element is
// followed: linking a symbolic link links the link, as Linux's link(2)
// does, so the new name cannot reach past the roots.
func (s *IOServer) Link(_ context.Context, req *wire.LinkRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	od, ob, err := s.parent(req.OldPath)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(od)
	nd, nb, err := s.parent(req.NewPath)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(nd)
	if err := unix.Linkat(od, ob, nd, nb, 0); err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := statAt(nd, nb)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

// Mknod makes a FIFO, a socket or an empty regular file. A job's FIFOs and
// sockets carry their data on the execute machine (its kernel serves them,
// not iofs); the submit side holds only their names. Devices are refused.
func (s *IOServer) Mknod(_ context.Context, req *wire.MknodRequest) (*wire.AttrReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	switch req.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFREG, 0:
	default:
		return &wire.AttrReply{Errno: uint32(syscall.EPERM)}, nil
	}
	dirfd, base, err := s.parent(req.Path)
	if err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	defer unix.Close(dirfd)
	if err := unix.Mknodat(dirfd, base, req.Mode&(unix.S_IFMT|0o7777), 0); err != nil {
		return &wire.AttrReply{Errno: errno(err)}, nil
	}
	a, err := statAt(dirfd, base)
	return &wire.AttrReply{Errno: errno(err), Attr: a}, nil
}

// SyncDir makes a directory's entries durable.
func (s *IOServer) SyncDir(_ context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	fd, err := s.open(req.Path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return &wire.ErrnoReply{Errno: errno(err)}, nil
	}
	defer unix.Close(fd)
	return &wire.ErrnoReply{Errno: errno(unix.Fsync(fd))}, nil
}

// Account adds to the statistics what the job did with files that came
// whole with a lookup: iofs served those opens and reads itself.
func (s *IOServer) Account(_ context.Context, req *wire.AccountRequest) (*wire.ErrnoReply, error) {
	if err := s.auth(req.Secret); err != nil {
		return nil, err
	}
	for _, f := range req.Files {
		if _, _, err := s.where(f.Path); err != nil {
			continue // not a file of this job
		}
		c := s.counters(f.Path)
		c.opens.Add(int64(f.Opens))
		c.reads.Add(int64(f.Reads))
		c.bytesRead.Add(int64(f.BytesRead))
	}
	return &wire.ErrnoReply{}, nil
}

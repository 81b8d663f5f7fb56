package iofs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options configure a mount. The zero value works.
type Options struct {
	// LocalDir holds the files of the "local" method (the job's scratch
	// directory on the execute machine); without it local names do not
	// exist.
	LocalDir string
	// StageDir holds the private copies of the fetch and compress
	// methods; os.TempDir() if empty.
	StageDir string
	// HTTPClient reads http and https names. The default refuses
	// addresses of the execute machine itself (loopback, link-local).
	HTTPClient *http.Client
	// Timeout is how long the kernel may cache names and attributes
	// (default one second). It is also how long a lookup's answer to
	// phase one serves the open that follows it.
	Timeout time.Duration
	// ReadAhead is how far the kernel reads ahead of a sequential reader
	// (default 16 MiB; FUSE's own default is 128 KiB). It is set as root
	// only.
	ReadAhead int
	// Prefetch is how much of a remote file comes back with its open
	// (default 64 KiB); small files then need no further round trip.
	Prefetch int
	// Logger hears of errors no program can be told of, such as a failed
	// write-back after the last close.
	Logger *slog.Logger
	// Debug logs every FUSE request.
	Debug bool
	// JobUID is the user the job runs as. Mounted by root, the mount is
	// open to other users for the job's sake, and iofs refuses every
	// other user but root (see callerGuard); zero lets in root alone.
	JobUID uint32
	// Owner is the job's owner on the submit side, who runs the shadow.
	// iofs shows the owner's files as the job's own, owned by JobUID and,
	// where their group is the owner's, by JobGID, as a local disk shows
	// users their files: programs that check that they own what they work
	// in (git's safe.directory, ssh's keys, test -O) find it so, whatever
	// user the job runs as here. A change of owner to the job's user or
	// group is one to the owner's. nil: the submit side's ids as they are.
	Owner *IDs
	// JobGID is the group the job runs as (see Owner).
	JobGID uint32
}

// IDs are a user's and a group's numeric ids.
type IDs struct{ UID, GID uint32 }

// Server is a mounted iofs.
type Server struct {
	mountpoint string
	fsys       *fileSystem
	fuse       *fuse.Server
	usage      *usage
	prefetches *prefetches
}

// Mount mounts iofs at mountpoint, serving the job whose shadow c reaches.
// As root it mounts directly with mount(2); otherwise it needs fusermount3.
// ctx bounds only the mount itself: a mounted iofs runs until Unmount.
func Mount(ctx context.Context, mountpoint string, c Client, opts Options) (*Server, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.ReadAhead <= 0 {
		opts.ReadAhead = 16 << 20
	}
	if opts.Prefetch == 0 {
		opts.Prefetch = 64 << 10
	}
	if opts.StageDir == "" {
		opts.StageDir = os.TempDir()
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultHTTPClient()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	fsys := &fileSystem{
		client: c, opts: opts, usage: newUsage(c, opts.Logger), names: newNames(opts.Timeout), prefetches: newPrefetches(),
		remote: &remote{c: c, prefetch: opts.Prefetch},
		local:  &local{dir: opts.LocalDir},
		http:   &web{scheme: "http", client: opts.HTTPClient},
		https:  &web{scheme: "https", client: opts.HTTPClient},
	}
	// The job's directory itself must exist before anything is mounted.
	res, err := c.Resolve(ctx, ".", 0)
	if err != nil {
		fsys.usage.close()
		fsys.prefetches.stop()
		return nil, fmt.Errorf("iofs: resolve the job's directory: %w", err)
	}
	if _, err := fsys.stat(ctx, res); err != nil {
		fsys.usage.close()
		fsys.prefetches.stop()
		return nil, fmt.Errorf("iofs: the job's directory %s: %w", res.Physical, err)
	}
	root := &node{fsys: fsys}
	timeout := opts.Timeout
	fo := &fs.Options{
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		// Names that do not exist are remembered too: programs look for
		// their lock, journal and configuration files over and over.
		NegativeTimeout: &timeout,
		MountOptions: fuse.MountOptions{
			FsName:       "iofs",
			Name:         "iofs",
			AllowOther:   os.Geteuid() == 0, // the job runs as another user
			DirectMount:  true,
			MaxWrite:     1 << 20,
			MaxReadAhead: 1 << 20,
			// Read-ahead requests are background requests: let all
			// of a 16 MiB read-ahead travel at once (default 12).
			MaxBackground: 32,
			Debug:         opts.Debug,
			DisableSplice: true,
			// The kernel gathers the job's writes in its page cache and
			// sends them in large requests when it writes them back:
			// close(2) and fsync(2) write them back first, and
			// Server.Sync does for checkpoints and the job's end.
			ExtraCapabilities: fuse.CAP_WRITEBACK_CACHE | fuse.CAP_HANDLE_KILLPRIV_V2,
		},
	}
	srv, err := mount(mountpoint, root, fo, opts.JobUID)
	if err != nil {
		fsys.usage.close()
		fsys.prefetches.stop()
		return nil, fmt.Errorf("iofs: mount %s: %w", mountpoint, err)
	}
	if os.Geteuid() == 0 {
		if err := setBDI(mountpoint, "read_ahead_kb", opts.ReadAhead>>10); err != nil {
			opts.Logger.Warn("iofs: set read-ahead", "err", err)
		}
		// FUSE lets a mount hold 1% of the dirty memory (45 MB on 23 GiB):
		// past it the job's writes wait for write-back, at the pace of
		// one FUSE request per page for scattered writes.
		if err := setBDI(mountpoint, "max_bytes", maxDirty); err != nil {
			opts.Logger.Warn("iofs: set the dirty-page limit", "err", err)
		}
	}
	return &Server{mountpoint: mountpoint, fsys: fsys, fuse: srv, usage: fsys.usage, prefetches: fsys.prefetches}, nil
}

// mount is fs.Mount with the callers of a mount open to others guarded.
func mount(mountpoint string, root fs.InodeEmbedder, fo *fs.Options, jobUID uint32) (*fuse.Server, error) {
	raw := fs.NewNodeFS(root, fo)
	if fo.AllowOther {
		raw = &callerGuard{RawFileSystem: raw, uid: jobUID}
	}
	srv, err := fuse.NewServer(raw, mountpoint, &fo.MountOptions)
	if err != nil {
		return nil, err
	}
	if err := fuseCloseOnExec(); err != nil {
		srv.Unmount()
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, err
	}
	return srv, nil
}

// fuseCloseOnExec marks this process's /dev/fuse descriptors close-on-exec.
// go-fuse's direct mount leaves its own without, so that every process
// the starter starts (CRIU, among them) held the connection: one that
// outlived the starter kept its mount alive, answering nothing, where
// the kernel ends a connection nobody holds.
func fuseCloseOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list this process's descriptors: %w", err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "/dev/fuse" {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("make /dev/fuse close-on-exec: %w", err)
		}
	}
	return nil
}

// maxDirty bounds the job's written pages the kernel holds before it
// makes the job wait for their write-back. Server.Sync writes at most this
// much back after a checkpoint's dump.
const maxDirty = 256 << 20

// setBDI sets a setting of the mount's backing device, such as its
// read-ahead: several 1 MiB reads then travel to the shadow at once.
func setBDI(mountpoint, name string, value int) error {
	var st unix.Stat_t
	if err := unix.Stat(mountpoint, &st); err != nil {
		return err
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/%s", unix.Major(st.Dev), unix.Minor(st.Dev), name)
	return os.WriteFile(p, []byte(strconv.Itoa(value)), 0)
}

// Sync brings everything the job has written so far to the submit side:
// the pages the kernel holds dirty, and the writes iofs still sends. It
// returns once the shadow has made them, or with the first error among
// them, which the job's next operation on the file reports too. The
// starter calls it after a checkpoint's dump, before the checkpoint
// counts, and at the job's end: the kernel would otherwise write back at
// its own pace, after a job moved elsewhere had read its files.
//
// Only files open for writing (or mapped) can hold dirty pages: closing a
// file writes its pages back. Each is fsynced through the mount, which
// syncs it on the submit side too; syncfs(2) would not do, as it does not
// wait for a FUSE file system's writeback. Files unlinked while open have
// no data on the submit side to bring.
func (s *Server) Sync(ctx context.Context) error {
	var errs []error
	for _, name := range s.fsys.writtenNames() {
		if err := fsyncName(filepath.Join(s.mountpoint, name)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := s.fsys.settle(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("iofs: sync: %w", err)
	}
	return nil
}

// fsyncName fsyncs the file of name p: the kernel writes its dirty pages
// back and waits until iofs has taken them. The file is opened for
// reading, or for writing if its owner may not read it.
func fsyncName(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		fd, err = unix.Open(p, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}

// Unmount unmounts the file system; it fails while files are in use
// (EBUSY) unless the job is gone. Before it returns, the shadow has heard
// of everything the job did (see usage).
func (s *Server) Unmount() error {
	s.usage.flush()
	s.prefetches.stop()
	if err := s.fuse.Unmount(); err != nil {
		return fmt.Errorf("iofs: unmount: %w", err)
	}
	s.usage.close()
	return nil
}

// Wait returns once the file system is unmounted.
func (s *Server) Wait() {
	s.fuse.Wait()
	s.prefetches.stop()
	s.usage.close()
}

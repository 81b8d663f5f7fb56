package iofs

import (
	"context"
	"errors"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Methods of a physical name.
const (
	methodRemote   = "remote"
	methodLocal    = "local"
	methodHTTP     = "http"
	methodHTTPS    = "https"
	methodCompress = "compress"
	methodFetch    = "fetch"
	methodBuffer   = "buffer"
	methodAppend   = "append"
)

// lookupPrefetch: remote files up to this size come whole with their
// lookup. Small enough that listing a directory of such files costs little.
const lookupPrefetch = 4 << 10

// fileSystem is what every node shares.
type fileSystem struct {
	client      Client
	opts        Options
	remote      *remote
	local       *local
	http, https *web
	usage       *usage
	names       *names
	prefetches  *prefetches
	// writeBufs holds the buffers that carry writes to the shadow in the
	// background (see behind).
	writeBufs sync.Pool
	// writing are the files open for writing, which Server.Sync settles.
	writingMu sync.Mutex
	writing   map[*file]struct{}
	// linked are the nodes of regular files of more than one name, by
	// the submit side's device and inode number: every name of such a
	// file is the one node, whose pages the job's writes through any
	// name go to (see newChild).
	linkedMu sync.Mutex
	linked   map[fileID]*node
}

// fileID tells one file from another on the side that holds it.
type fileID struct{ dev, ino uint64 }

// linkedNode returns the node of the file of more than one name whose
// attributes are a, if the kernel knows it and it has not changed.
func (f *fileSystem) linkedNode(a Attr) *node {
	if a.Nlink < 2 || a.Ino == 0 || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	f.linkedMu.Lock()
	n := f.linked[fileID{a.Dev, a.Ino}]
	f.linkedMu.Unlock()
	if n == nil || !n.sameFile(a) || !n.current(a) {
		return nil
	}
	return n
}

// recordLinked records n as the node of its file, if it has more than one
// name (a, its attributes, say).
func (f *fileSystem) recordLinked(n *node, a Attr) {
	if a.Nlink < 2 || a.Ino == 0 || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return
	}
	f.linkedMu.Lock()
	if f.linked == nil {
		f.linked = map[fileID]*node{}
	}
	f.linked[fileID{a.Dev, a.Ino}] = n
	f.linkedMu.Unlock()
}

// forgetLinked forgets n as the node of its file.
func (f *fileSystem) forgetLinked(n *node) {
	f.linkedMu.Lock()
	id := fileID{n.dev, n.ino}
	if f.linked[id] == n {
		delete(f.linked, id)
	}
	f.linkedMu.Unlock()
}

// writtenNames returns a name of each file open for writing, as far as it
// has one.
func (f *fileSystem) writtenNames() []string {
	f.writingMu.Lock()
	nodes := map[*node]struct{}{}
	for w := range f.writing {
		nodes[w.node] = struct{}{}
	}
	f.writingMu.Unlock()
	var names []string
	for n := range nodes {
		if name, err := n.logical(); err == nil {
			names = append(names, name)
		}
	}
	return names
}

// settle waits until the writes made through every file open for writing
// have reached the submit side, and returns their errors.
func (f *fileSystem) settle(ctx context.Context) error {
	f.writingMu.Lock()
	files := make([]*file, 0, len(f.writing))
	for w := range f.writing {
		files = append(files, w)
	}
	f.writingMu.Unlock()
	var errs []error
	for _, w := range files {
		if err := w.settle(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *fileSystem) backend(p Physical) (backend, error) {
	switch p.Base() {
	case methodRemote:
		return f.remote, nil
	case methodLocal:
		return f.local, nil
	case methodHTTP:
		return f.http, nil
	case methodHTTPS:
		return f.https, nil
	}
	return nil, syscall.EPROTONOSUPPORT
}

// stat returns the attributes of a resolved name; the shadow has sent
// them along for remote names.
func (f *fileSystem) stat(ctx context.Context, r Resolution) (Attr, error) {
	if r.Physical.Base() == methodRemote {
		if r.StatErr != nil {
			return Attr{}, r.StatErr
		}
		if r.Attr != nil {
			return *r.Attr, nil
		}
	}
	be, err := f.backend(r.Physical)
	if err != nil {
		return Attr{}, err
	}
	return be.stat(ctx, r.Physical.Path)
}

// open is phase two: it opens the physical name with its chain of methods.
func (f *fileSystem) open(ctx context.Context, p Physical, flags, mode uint32) (handle, Attr, error) {
	be, err := f.backend(p)
	if err != nil {
		return nil, Attr{}, err
	}
	stage := p.has(methodCompress) || p.has(methodFetch)
	inner := flags
	switch {
	case stage:
		// The copy is read in first and written back whole.
		inner &^= syscall.O_APPEND
		if inner&syscall.O_ACCMODE == syscall.O_WRONLY {
			inner = inner&^syscall.O_ACCMODE | syscall.O_RDWR
		}
	case p.has(methodAppend):
		inner |= syscall.O_APPEND
	}
	h, a, err := be.open(ctx, p.Path, inner, mode)
	if err != nil {
		return nil, Attr{}, err
	}
	if stage {
		s, err := newStaged(ctx, h, f.opts.StageDir, p.has(methodCompress), flags&syscall.O_TRUNC != 0 || a.Size == 0)
		if err != nil {
			h.Close(context.WithoutCancel(ctx))
			return nil, Attr{}, err
		}
		h = s
		if a, err = s.Stat(ctx); err != nil {
			s.Close(context.WithoutCancel(ctx))
			return nil, Attr{}, err
		}
	}
	switch {
	case p.has(methodBuffer):
		h = newBuffered(h, p.BufferSize, p.BufferBlockSize, int64(a.Size))
	case !stage && p.Base() == methodRemote && flags&syscall.O_ACCMODE != syscall.O_RDONLY:
		if bw, ok := h.(batchWriter); ok {
			h = newBehind(bw, inner&syscall.O_APPEND != 0, &f.writeBufs, a)
		}
	}
	return h, a, nil
}

// cachedFlags adapts the open flags of a file whose writes the kernel
// caches (see Mount): it reads the pages around a partial write even of a
// file open for writing only, and places appends itself, at the end of
// the file as it knows it. A file the job may write but not read is then
// opened as asked.
func cachedFlags(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags &^ syscall.O_APPEND
}

// openCached opens a file the kernel opens with the FUSE open flags ff,
// with cachedFlags unless they bypass the page cache.
func (f *fileSystem) openCached(ctx context.Context, p Physical, flags, mode, ff uint32) (handle, Attr, error) {
	if ff&fuse.FOPEN_DIRECT_IO != 0 {
		return f.open(ctx, p, flags, mode)
	}
	h, a, err := f.open(ctx, p, cachedFlags(flags), mode)
	if errors.Is(err, syscall.EACCES) && cachedFlags(flags) != flags {
		return f.open(ctx, p, flags, mode)
	}
	return h, a, err
}

// toErrno gives the job the errno behind err.
func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

// fillAttr gives the kernel a, its owner and group as the job sees them
// (Options.Owner).
func (f *fileSystem) fillAttr(out *fuse.Attr, a Attr) {
	out.Ino = 0 // go-fuse numbers the nodes
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Owner = fuse.Owner{Uid: a.Uid, Gid: a.Gid}
	if o := f.opts.Owner; o != nil {
		if a.Uid == o.UID {
			out.Uid = f.opts.JobUID
		}
		if a.Gid == o.GID {
			out.Gid = f.opts.JobGID
		}
	}
	out.Size = a.Size
	out.Blocks = a.Blocks
	out.Blksize = 4096
	out.SetTimes(ptime(a.Atime), ptime(a.Mtime), ptime(a.Ctime))
}

func ptime(ns int64) *time.Time {
	t := time.Unix(0, ns)
	return &t
}

// node is a name in the job's directory. It remembers the answer to phase
// one for Options.Timeout, so that the open following a lookup needs no
// second round trip; after that, and after a rename, it asks again.
type node struct {
	fs.Inode
	fsys *fileSystem

	mu   sync.Mutex
	name string // the logical name phys was resolved for
	phys Physical
	// dev and ino are the device and inode number of the file behind
	// phys, 0 if unknown.
	dev, ino uint64
	at       time.Time
	// whole is the file's contents, sent with the lookup (small files),
	// and wholeAttr its attributes then.
	whole     []byte
	wholeAttr Attr
	// seen is the file's attributes as iofs last gave them, for a file
	// the job removed but holds (see Getattr).
	seen Attr
	open map[*file]struct{}
	// cached is the file as the kernel's page cache of it holds it, as
	// far as iofs knows: as it was at its last open or close through
	// iofs (see keepCache).
	cached   cacheState
	cachedOK bool
	// writers counts the open files open for writing; randomReads and
	// lastEnd follow the job's reads that missed the page cache, fetch is
	// the prefetch under way (see prefetch.go).
	writers     int
	randomReads int
	lastEnd     int64
	fetch       *fetcher
	// gen counts the changes the job made to the file's contents through
	// its open files; each file holds the count its contents were fetched
	// at (see file.Read).
	gen uint64
}

// cacheState is what tells one version of a file from another: the
// submit side changes mtime, ctime or size with every change.
type cacheState struct {
	mtime, ctime int64
	size         uint64
}

func stateOf(a Attr) cacheState { return cacheState{mtime: a.Mtime, ctime: a.Ctime, size: a.Size} }

// keepCache reports whether the kernel may keep the pages it caches of
// the file opened now with attributes a: only if nothing changed the file
// since iofs last saw it (FUSE otherwise drops them at every open, and a
// program that opens a file again reads it all again over the network).
// A changed file stays recorded as the kernel knows it, which keeps the
// size and times of its inode (see current): the next lookup of its name
// makes it a new inode.
func (n *node) keepCache(a Attr) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.cachedOK {
		n.cached, n.cachedOK = stateOf(a), a.Mtime != 0 || a.Ctime != 0
		return false
	}
	return n.cached == stateOf(a)
}

// record records a as the file the kernel knows: as the job's own
// changes left it, or as first looked up.
func (n *node) record(a Attr) {
	n.mu.Lock()
	n.cached, n.cachedOK = stateOf(a), a.Mtime != 0 || a.Ctime != 0
	n.mu.Unlock()
}

// track records a file of the node opened with flags and returns it. gen
// is the node's count of changes before the file was opened.
func (n *node) track(h handle, flags uint32, gen uint64) *file {
	f := &file{h: h, node: n, writable: flags&syscall.O_ACCMODE != syscall.O_RDONLY, gen: gen}
	n.mu.Lock()
	if n.open == nil {
		n.open = map[*file]struct{}{}
	}
	n.open[f] = struct{}{}
	if f.writable {
		n.writers++
	}
	n.mu.Unlock()
	if f.writable {
		n.fsys.writingMu.Lock()
		if n.fsys.writing == nil {
			n.fsys.writing = map[*file]struct{}{}
		}
		n.fsys.writing[f] = struct{}{}
		n.fsys.writingMu.Unlock()
	}
	return f
}

// drainOthers waits until the writes made through the node's open files
// other than f (any, if f is nil) have reached the shadow. A write's
// error stays with its file.
func (n *node) drainOthers(f *file) {
	n.mu.Lock()
	var others []settler
	for o := range n.open {
		if s, ok := o.h.(settler); ok && o != f {
			others = append(others, s)
		}
	}
	n.mu.Unlock()
	for _, s := range others {
		s.settle() // the error is the other file's to report
	}
}

// changing returns the node's count of changes before a file is opened:
// what the open brings along of the file was fetched after the writes
// made through its other files, which it first waits for.
func (n *node) changing() uint64 {
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	n.drainOthers(nil)
	return gen
}

// changed counts a change of the file's contents made through f (or by
// name, if f is nil): its other open files must fetch again what they
// hold of the file, as must an open that would use what the lookup
// brought along.
func (n *node) changed(f *file) {
	n.mu.Lock()
	if f != nil && f.gen == n.gen {
		f.gen++ // f holds nothing older than its own change
	}
	n.gen++
	n.whole = nil
	n.mu.Unlock()
}

// outdated reports whether f holds contents of the file fetched before a
// change made through another of its open files, and counts it current.
func (n *node) outdated(f *file) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f.gen == n.gen {
		return false
	}
	f.gen = n.gen
	return true
}

func (n *node) forget(f *file) {
	n.mu.Lock()
	delete(n.open, f)
	if f.writable {
		n.writers--
	}
	n.mu.Unlock()
	n.fsys.writingMu.Lock()
	delete(n.fsys.writing, f)
	n.fsys.writingMu.Unlock()
}

// openOrphan opens a node whose name is gone through one of its open
// files.
func (n *node) openOrphan(ctx context.Context, flags uint32) (*file, error) {
	n.mu.Lock()
	var r reopener
	for f := range n.open {
		if rf, ok := f.h.(reopener); ok {
			r = rf
			break
		}
	}
	n.mu.Unlock()
	if r == nil {
		return nil, syscall.ENOENT
	}
	gen := n.changing()
	// Through the page cache, as the kernel opens it.
	h, err := r.reopen(ctx, cachedFlags(flags))
	if errors.Is(err, syscall.EACCES) && cachedFlags(flags) != flags {
		h, err = r.reopen(ctx, flags)
	}
	if err != nil {
		return nil, err
	}
	return n.track(h, flags, gen), nil
}

var (
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeReaddirer   = (*node)(nil)
	_ fs.NodeMkdirer     = (*node)(nil)
	_ fs.NodeUnlinker    = (*node)(nil)
	_ fs.NodeRmdirer     = (*node)(nil)
	_ fs.NodeRenamer     = (*node)(nil)
	_ fs.NodeSymlinker   = (*node)(nil)
	_ fs.NodeReadlinker  = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
	_ fs.NodeLinker      = (*node)(nil)
	_ fs.NodeMknoder     = (*node)(nil)
	_ fs.NodeFsyncer     = (*node)(nil)
	_ fs.NodeOnForgetter = (*node)(nil)
	_ fs.NodeLseeker     = (*node)(nil)
)

// logical returns the node's name relative to the job's directory, or
// ENOENT for a node whose name was unlinked.
func (n *node) logical() (string, error) {
	if n.IsRoot() {
		return ".", nil
	}
	if p := n.Path(nil); p != "" && n.Path(n.Root()) == p {
		return p, nil
	}
	return "", syscall.ENOENT
}

func (n *node) child(name string) (string, error) {
	l, err := n.logical()
	return path.Join(l, name), err
}

// resolve runs phase one for the node's current name.
func (n *node) resolve(ctx context.Context) (Resolution, error) {
	name, err := n.logical()
	if err != nil {
		return Resolution{}, err
	}
	r, err := n.fsys.client.Resolve(ctx, name, 0)
	if err != nil {
		return Resolution{}, err
	}
	n.remember(name, r.Physical, nil, Attr{})
	return r, nil
}

// remember keeps the answer to phase one, and the file itself if it came
// along (whole is nil otherwise).
func (n *node) remember(name string, p Physical, whole []byte, a Attr) {
	n.mu.Lock()
	if n.writers > 0 {
		whole = nil // the job's writes may still be on their way
	}
	n.name, n.phys, n.at, n.whole, n.wholeAttr = name, p, time.Now(), whole, a
	if a.Mode != 0 {
		n.seen = a
	}
	n.mu.Unlock()
}

// takeWhole returns, once, the file that came with a fresh lookup.
func (n *node) takeWhole(name string) ([]byte, Attr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.whole
	n.whole = nil
	return w, n.wholeAttr, w != nil && n.name == name && time.Since(n.at) < n.fsys.opts.Timeout
}

// physical returns the node's physical name, resolving it again unless a
// fresh answer is at hand.
func (n *node) physical(ctx context.Context) (Physical, error) {
	name, err := n.logical()
	if err != nil {
		return Physical{}, err
	}
	n.mu.Lock()
	if n.name == name && time.Since(n.at) < n.fsys.opts.Timeout {
		p := n.phys
		n.mu.Unlock()
		return p, nil
	}
	n.mu.Unlock()
	r, err := n.resolve(ctx)
	return r.Physical, err
}

func (n *node) newChild(ctx context.Context, name string, p Physical, whole []byte, a Attr, out *fuse.EntryOut) *fs.Inode {
	n.fsys.fillAttr(&out.Attr, a)
	// The same file found again under its name (the kernel's entry
	// expired) is the same inode, with the same number: a job holding it
	// open finds by its name the file it has open, as CRIU checks when
	// it checkpoints the job. A regular file changed on the submit side
	// since is a new inode (with a new number) unless it is open: with
	// writeback caching the kernel keeps the size and times it knows of
	// an inode and never takes them from iofs again.
	if in := n.GetChild(path.Base(name)); in != nil {
		if old, ok := in.Operations().(*node); ok && old.sameFile(a) && old.current(a) {
			old.remember(name, p, whole, a)
			return in
		}
	}
	// Another name of a hard link the kernel knows is the same inode
	// too: a job writing through one name reads the writes through the
	// other, which with writeback caching are first the inode's pages.
	if old := n.fsys.linkedNode(a); old != nil {
		old.remember(name, p, whole, a)
		return old.EmbeddedInode()
	}
	ch := &node{fsys: n.fsys, dev: a.Dev, ino: a.Ino}
	ch.remember(name, p, whole, a)
	ch.record(a)
	in := n.NewInode(ctx, ch, fs.StableAttr{Mode: a.Mode & syscall.S_IFMT})
	n.fsys.recordLinked(ch, a)
	return in
}

// Lseek leaves SEEK_DATA and SEEK_HOLE to the kernel, which then finds
// the file's data in the size it knows: with writeback caching the size
// of what the job wrote, where the submit side's (which go-fuse would
// ask) lacks what the kernel has not written back yet. (CRIU found a
// removed file the job had just written empty, and saved none of it.)
// iofs knows of no holes: all of a file is data.
func (n *node) Lseek(context.Context, fs.FileHandle, uint64, uint32) (uint64, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// OnForget runs when the kernel has forgotten the node.
func (n *node) OnForget() { n.fsys.forgetLinked(n) }

// sameFile reports whether the node is the file of attributes a: the same
// type and inode number (where it is kept). The name it was reached by
// may differ: that of another hard link, or one the mapping changed.
func (n *node) sameFile(a Attr) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return a.Ino != 0 && n.dev == a.Dev && n.ino == a.Ino && n.StableAttr().Mode == a.Mode&syscall.S_IFMT
}

// current reports whether the kernel's inode of the node may stand for the
// file of attributes a: it is not a regular file, or it is open, or the
// file is as the kernel's cache of it knows it.
func (n *node) current(a Attr) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return a.Mode&syscall.S_IFMT != syscall.S_IFREG || len(n.open) > 0 || !n.cachedOK || n.cached == stateOf(a)
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	logical, err := n.child(name)
	if err != nil {
		return nil, toErrno(err)
	}
	if n.fsys.names.absent(logical) {
		return nil, syscall.ENOENT
	}
	at := time.Now()
	r, err := n.fsys.client.Resolve(ctx, logical, lookupPrefetch)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.names.remember(logical, r.Physical, at)
	a, err := n.fsys.stat(ctx, r)
	if err != nil {
		return nil, toErrno(err)
	}
	var whole []byte
	if r.Whole {
		whole = r.Data
		if whole == nil {
			whole = []byte{}
		}
	}
	return n.newChild(ctx, logical, r.Physical, whole, a, out), 0
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var a Attr
	var err error
	if f, ok := fh.(*file); ok {
		a, err = f.h.Stat(ctx)
	} else {
		var r Resolution
		if r, err = n.resolve(ctx); err == nil {
			a, err = n.fsys.stat(ctx, r)
		}
	}
	if err != nil {
		var ok bool
		if a, ok = n.removed(err); !ok {
			return toErrno(err)
		}
	}
	n.mu.Lock()
	n.seen = a
	n.mu.Unlock()
	n.fsys.fillAttr(&out.Attr, a)
	return 0
}

// removed returns the attributes of a directory the job removed but
// holds (one it works in), which a stat by its name failed to find with
// err: as last seen, with no links, as a local file system answers an
// fstat of it.
func (n *node) removed(err error) (Attr, bool) {
	if !errors.Is(err, syscall.ENOENT) {
		return Attr{}, false
	}
	if _, lerr := n.logical(); lerr == nil {
		return Attr{}, false // the name is the job's: gone on the submit side
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// A regular file's size as last seen may lack the job's writes;
	// one the job holds open answers through it.
	if n.seen.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return Attr{}, false
	}
	a := n.seen
	a.Nlink = 0
	return a, true
}

// Setattr changes the attributes on the submit side, where its operating
// system decides as for the job's owner, who runs the shadow: a change of
// owner, say, succeeds only as far as the owner may make it there. A
// symbolic link's own attributes (utimensat's AT_SYMLINK_NOFOLLOW) are
// changed on the link, never on its target.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if a, ok := n.deferMtime(fh, in); ok {
		n.fsys.fillAttr(&out.Attr, a)
		out.SetTimeout(n.fsys.opts.Timeout)
		return 0
	}
	var set SetAttr
	if uid, ok := in.GetUID(); ok {
		if o := n.fsys.opts.Owner; o != nil && uid == n.fsys.opts.JobUID {
			uid = o.UID // the job's own, as fillAttr shows it
		}
		set.Uid = &uid
	}
	if gid, ok := in.GetGID(); ok {
		if o := n.fsys.opts.Owner; o != nil && gid == n.fsys.opts.JobGID {
			gid = o.GID
		}
		set.Gid = &gid
	}
	if m, ok := in.GetMode(); ok {
		set.Mode = &m
	}
	// A time "now" is the submit machine's, and asks for write permission
	// only, not ownership, as utimensat's UTIME_NOW.
	if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
		set.AtimeNow = true
	} else if in.Valid&fuse.FATTR_ATIME != 0 {
		ns := int64(in.Atime)*1e9 + int64(in.Atimensec)
		set.Atime = &ns
	}
	if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
		set.MtimeNow = true
	} else if in.Valid&fuse.FATTR_MTIME != 0 {
		ns := int64(in.Mtime)*1e9 + int64(in.Mtimensec)
		set.Mtime = &ns
	}
	if size, ok := in.GetSize(); ok {
		f, _ := fh.(*file)
		// Made after the writes on their way, which it may cut.
		n.drainOthers(f)
		if f != nil {
			// Through the open file: it may be staged, buffered or unlinked.
			if err := f.h.Truncate(ctx, int64(size)); err != nil {
				return toErrno(err)
			}
		} else {
			set.Size = &size
		}
		n.changed(f)
	}
	// The shadow answers a change with the file's attributes after it:
	// they are the reply, without another round trip to ask for them.
	var after *Attr
	if f, ok := fh.(*file); ok && !set.empty() {
		// Through the open file, which may have no name any more.
		if s, ok := f.h.(attrSetter); ok {
			a, err := s.setattr(ctx, set)
			if err != nil {
				return toErrno(err)
			}
			n.record(a) // changed by the job
			after, set = &a, SetAttr{}
		}
	}
	if !set.empty() {
		p, err := n.physical(ctx)
		if err != nil {
			return toErrno(err)
		}
		be, err := n.fsys.backend(p)
		if err != nil {
			return toErrno(err)
		}
		a, err := be.setattr(ctx, p.Path, set)
		if err != nil {
			return toErrno(err)
		}
		n.record(a) // changed by the job
		if _, open := fh.(*file); !open {
			// An open file may be another thing than its physical
			// file (a staged copy): it says its attributes itself.
			after = &a
		}
	}
	if after != nil {
		n.fsys.fillAttr(&out.Attr, *after)
	} else if errno := n.Getattr(ctx, fh, out); errno != 0 {
		return errno
	}
	// Valid as long as a GETATTR's answer: otherwise the kernel asks again
	// before the job's next write.
	out.SetTimeout(n.fsys.opts.Timeout)
	return 0
}

// deferMtime sends the modification time the kernel writes back, after
// writes it cached, with the writes instead of in a round trip of its
// own: it is most often followed by an fsync, which then takes it along.
// Only a change of the modification time alone, through a file whose
// writes travel in the background, is deferred.
func (n *node) deferMtime(fh fs.FileHandle, in *fuse.SetAttrIn) (Attr, bool) {
	const others = ^uint32(fuse.FATTR_MTIME | fuse.FATTR_CTIME | fuse.FATTR_FH | fuse.FATTR_LOCKOWNER)
	if in.Valid&fuse.FATTR_MTIME == 0 || in.Valid&others != 0 {
		return Attr{}, false
	}
	f, ok := fh.(*file)
	if !ok {
		return Attr{}, false
	}
	b, ok := f.h.(*behind)
	if !ok {
		return Attr{}, false
	}
	return b.deferMtime(int64(in.Mtime)*1e9 + int64(in.Mtimensec))
}

// openFlags tells the kernel how to cache a file: transformed contents
// (compress) and appends bypass the page cache.
func openFlags(p Physical) uint32 {
	if p.has(methodCompress) || p.has(methodAppend) {
		return fuse.FOPEN_DIRECT_IO
	}
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if _, err := n.logical(); err != nil {
		f, err := n.openOrphan(ctx, flags)
		if err != nil {
			return nil, 0, toErrno(err)
		}
		return f, 0, 0
	}
	p, err := n.physical(ctx)
	if err != nil {
		return nil, 0, toErrno(err)
	}
	gen := n.changing()
	name, _ := n.logical()
	if data, a, ok := n.takeWhole(name); ok && flags&(syscall.O_ACCMODE|syscall.O_TRUNC) == syscall.O_RDONLY && len(p.Methods) == 1 && p.Base() == methodRemote {
		// Phase two was answered with phase one; the shadow hears of it
		// later, as an open that read the file whole.
		n.fsys.usage.opened(p.Path, len(data))
		var ff uint32
		if n.keepCache(a) {
			ff = fuse.FOPEN_KEEP_CACHE
		} else {
			n.stopPrefetch()
		}
		return n.track(&remoteFile{c: n.fsys.client, path: p.Path, flags: flags, head: data, headEOF: true, attr: a}, flags, gen), ff, 0
	}
	ff := openFlags(p)
	h, a, err := n.fsys.openCached(ctx, p, flags, 0, ff)
	if err != nil {
		return nil, 0, toErrno(err)
	}
	if ff&fuse.FOPEN_DIRECT_IO == 0 {
		if n.keepCache(a) {
			ff |= fuse.FOPEN_KEEP_CACHE
		} else {
			n.stopPrefetch() // its pages are about to be dropped
		}
	}
	f := n.track(h, flags, gen)
	if f.writable {
		n.stopPrefetch()
	}
	if s, ok := h.(*staged); ok && s.gzip {
		n.learnSize(ctx, s, a.Size)
	}
	return f, ff, 0
}

// learnSize tells the kernel the size of a compressed file's contents,
// which the job reads from its copy: the kernel keeps the size the look-up
// brought, the compressed file's, and trusts it over any a later GETATTR
// gives (it caches the file's writes). Storing the copy's last byte in
// its page cache makes it learn a larger size; a smaller one (contents
// that do not compress) it cannot be told.
func (n *node) learnSize(ctx context.Context, s *staged, size uint64) {
	if size == 0 {
		return
	}
	var b [1]byte
	last, err := s.ReadAt(ctx, b[:], int64(size-1))
	if err != nil || len(last) != 1 {
		return
	}
	if errno := n.WriteCache(int64(size-1), last); errno != 0 {
		n.fsys.opts.Logger.Debug("iofs: the size of a compressed file's contents", "err", errno)
	}
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	logical, err := n.child(name)
	if err != nil {
		return nil, nil, 0, toErrno(err)
	}
	n.fsys.names.made(logical)
	p, err := n.fsys.names.resolve(ctx, n.fsys.client, logical)
	if err != nil {
		return nil, nil, 0, toErrno(err)
	}
	// The file may exist and be open, with writes on their way.
	var prior *node
	var gen uint64
	if c := n.GetChild(name); c != nil {
		if prior, _ = c.Operations().(*node); prior != nil {
			gen = prior.changing()
		}
	}
	ff := openFlags(p)
	h, a, err := n.fsys.openCached(ctx, p, flags|syscall.O_CREAT, mode, ff)
	if err != nil {
		return nil, nil, 0, toErrno(err)
	}
	child := n.newChild(ctx, logical, p, nil, a, out)
	ch := child.Operations().(*node)
	if ch != prior {
		gen = ch.changing()
	}
	return child, ch.track(h, flags, gen), ff, 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	p, err := n.physical(ctx)
	if err != nil {
		return nil, toErrno(err)
	}
	be, err := n.fsys.backend(p)
	if err != nil {
		return nil, toErrno(err)
	}
	ents, err := be.readdir(ctx, p.Path)
	if err != nil {
		return nil, toErrno(err)
	}
	out := make([]fuse.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = fuse.DirEntry{Name: e.Name, Mode: e.Mode}
	}
	return fs.NewListDirStream(out), 0
}

// childBackend resolves a child name for an operation on the name itself.
func (n *node) childBackend(ctx context.Context, name string) (backend, Physical, string, error) {
	logical, err := n.child(name)
	if err != nil {
		return nil, Physical{}, "", err
	}
	p, err := n.fsys.names.resolve(ctx, n.fsys.client, logical)
	if err != nil {
		return nil, Physical{}, "", err
	}
	be, err := n.fsys.backend(p)
	return be, p, logical, err
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	be, p, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.names.made(logical)
	a, err := be.mkdir(ctx, p.Path, mode)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.newChild(ctx, logical, p, nil, a, out), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	be, p, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return toErrno(err)
	}
	at := time.Now()
	if err := be.unlink(ctx, p.Path); err != nil {
		return toErrno(err)
	}
	n.fsys.names.removed(logical, at)
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	be, p, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return toErrno(err)
	}
	at := time.Now()
	if err := be.rmdir(ctx, p.Path); err != nil {
		return toErrno(err)
	}
	n.fsys.names.removed(logical, at)
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	be, from, fromLogical, err := n.childBackend(ctx, name)
	if err != nil {
		return toErrno(err)
	}
	_, to, toLogical, err := np.childBackend(ctx, newName)
	if err != nil {
		return toErrno(err)
	}
	if from.Base() != to.Base() {
		return syscall.EXDEV
	}
	n.fsys.names.made(toLogical)
	if flags&unix.RENAME_EXCHANGE != 0 {
		n.fsys.names.made(fromLogical)
	}
	at := time.Now()
	if err := be.rename(ctx, from.Path, to.Path, flags); err != nil {
		return toErrno(err)
	}
	if flags&unix.RENAME_EXCHANGE == 0 {
		n.fsys.names.removed(fromLogical, at)
	}
	return 0
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	be, p, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.names.made(logical)
	a, err := be.symlink(ctx, target, p.Path)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.newChild(ctx, logical, p, nil, a, out), 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	p, err := n.physical(ctx)
	if err != nil {
		return nil, toErrno(err)
	}
	be, err := n.fsys.backend(p)
	if err != nil {
		return nil, toErrno(err)
	}
	t, err := be.readlink(ctx, p.Path)
	if err != nil {
		return nil, toErrno(err)
	}
	return []byte(t), 0
}

// Link makes name another name of target. The new name is the target's
// inode: one file, one inode, whichever name the job uses.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	from, err := t.physical(ctx)
	if err != nil {
		return nil, toErrno(err)
	}
	be, to, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.names.made(logical)
	if from.Base() != to.Base() {
		return nil, syscall.EXDEV
	}
	a, err := be.link(ctx, from.Path, to.Path)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.recordLinked(t, a)
	n.fsys.fillAttr(&out.Attr, a)
	return t.EmbeddedInode(), 0
}

// Mknod makes FIFOs and sockets (and empty regular files). The submit side
// keeps their names; their data is the execute machine's kernel's, which
// serves a FIFO or socket on a FUSE mount itself: processes of the job
// talk through it as on a local disk.
func (n *node) Mknod(ctx context.Context, name string, mode, _ uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	be, p, logical, err := n.childBackend(ctx, name)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fsys.names.made(logical)
	a, err := be.mknod(ctx, p.Path, mode)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.newChild(ctx, logical, p, nil, a, out), 0
}

// fuseFsyncData in an FSYNC's flags asks for fdatasync(2).
const fuseFsyncData = 1

// Fsync makes an open file durable on the submit side (its data, for
// fdatasync); a directory's fsync makes its entries durable.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if f, ok := fh.(*file); ok {
		if b, ok := f.h.(*behind); ok && flags&fuseFsyncData != 0 {
			return toErrno(b.syncData(ctx))
		}
		return toErrno(f.h.Sync(ctx))
	}
	be, p, err := n.nameBackend(ctx)
	if err != nil {
		return toErrno(err)
	}
	return toErrno(be.syncDir(ctx, p.Path))
}

// Statfs reports a large, fixed capacity. It does not ask the shadow, so
// it works for every node, also for files unlinked while open, which
// checkpointing asks about.
func (n *node) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 40 / 4096
	*out = fuse.StatfsOut{Blocks: blocks, Bfree: blocks, Bavail: blocks, Files: 1 << 30, Ffree: 1 << 30,
		Bsize: 4096, NameLen: 255, Frsize: 4096}
	return 0
}

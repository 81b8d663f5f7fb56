package transfer

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/wire"
)

// Receiver writes the entries of a stream beneath To, chunk by chunk
// (Chunk), and finishes with Close. A small file, one whose entry's
// chunk brings all its data and its SHA-256, is written by one of a few
// goroutines while the stream goes on: creating a file is the kernel's
// work, which then goes on several CPUs at once (on ext4 without a
// journal, each create scans past every inode freed in the last minutes,
// 1 ms or more a file; docs/transfer-bench.md). Such files are whole
// under their names once Close returns; a failure among them is
// returned by a later Chunk or by Close.
type Receiver struct {
	To *os.Root
	// Limit, if positive, bounds the bytes of the files received.
	Limit int64
	// Rename, if set, gives an entry's name where it is written (HTCondor's
	// transfer_output_remaps); the result is held to the same rules.
	Rename func(name string) string
	// Files and Bytes count the files written and their data; read them
	// once Close (or Receive) has returned.
	Files int
	Bytes int64

	// taken counts the bytes of the files accepted, written or on their
	// way to a worker, for Limit.
	taken int64
	// lastDir is the directory last made for an entry, made once for all
	// the entries in it.
	lastDir string
	small   smallWriters

	// The file being received.
	cur     *wire.TransferEntry
	curName string // where it goes
	tmp     string
	f       *os.File
	h       hash.Hash
	n       int64
	// dirs get their mode and time once their contents are written.
	dirs []dirEntry
}

type dirEntry struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

// Chunk takes the next chunk of the stream. It does not retain c.
func (r *Receiver) Chunk(c *wire.TransferChunk) error {
	if err := r.small.failed(); err != nil {
		return r.fail(err)
	}
	if e := c.Entry; e != nil {
		if r.f != nil {
			return r.fail(&FileError{Name: r.cur.Name, Err: errors.New("cut short by the next entry")})
		}
		whole, err := r.begin(e, c)
		if err != nil {
			return r.fail(err)
		}
		if whole {
			return nil
		}
	}
	if r.f == nil {
		if len(c.Data) > 0 || len(c.Sha256) > 0 {
			return r.fail(errors.New("transfer stream: data outside a file"))
		}
		return nil
	}
	if len(c.Data) > 0 {
		r.n += int64(len(c.Data))
		if r.n > r.cur.Size {
			return r.fail(&FileError{Name: r.cur.Name, Err: ErrCorrupt})
		}
		if r.Limit > 0 && r.taken+r.n > r.Limit {
			return r.fail(&FileError{Name: r.cur.Name, Err: fmt.Errorf("%w of %d MB", ErrTooLarge, r.Limit>>20)})
		}
		r.h.Write(c.Data)
		if _, err := r.f.Write(c.Data); err != nil {
			return r.fail(&FileError{Name: r.cur.Name, Err: unwrapPath(err)})
		}
	}
	if len(c.Sha256) > 0 {
		if err := r.end(c.Sha256); err != nil {
			return r.fail(err)
		}
	}
	return nil
}

// Receive feeds r the chunks recv decodes, each into the same buffer
// (wire's codec decodes a chunk's data into the buffer Data brings),
// until recv returns io.EOF, and then closes r.
func (r *Receiver) Receive(recv func(*wire.TransferChunk) error) error {
	buf := make([]byte, 0, ChunkSize)
	var c wire.TransferChunk
	for {
		c.Reset()
		c.Data = buf
		err := recv(&c)
		if errors.Is(err, io.EOF) {
			return r.Close()
		}
		if err != nil {
			r.Abort()
			return err
		}
		if err := r.Chunk(&c); err != nil {
			return err
		}
	}
}

// Close finishes the stream: it fails if a file was cut short, waits
// for the small files to be written, and gives the directories received
// their permissions and times.
func (r *Receiver) Close() error {
	if r.f != nil {
		return r.fail(&FileError{Name: r.cur.Name, Err: errors.New("the stream ended in the middle of it")})
	}
	files, n, err := r.small.wait()
	r.Files += files
	r.Bytes += n
	if err != nil {
		return err
	}
	r.lastDir = ""
	// Deepest first: setting a directory's time after its children's.
	for i := len(r.dirs) - 1; i >= 0; i-- {
		d := r.dirs[i]
		if err := r.To.Chmod(d.name, d.mode); err != nil {
			return &FileError{Name: d.name, Err: unwrapPath(err)}
		}
		if err := r.To.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return &FileError{Name: d.name, Err: unwrapPath(err)}
		}
	}
	r.dirs = nil
	return nil
}

// Abort removes the temporary files of a stream that will not go on:
// the small files not yet begun are dropped, those begun are finished
// or removed before it returns.
func (r *Receiver) Abort() {
	files, n := r.small.abort()
	r.Files += files
	r.Bytes += n
	if r.f != nil {
		r.f.Close()
		_ = r.To.Remove(r.tmp)
		r.f = nil
	}
}

func (r *Receiver) fail(err error) error {
	r.Abort()
	return err
}

// begin starts an entry: a directory or link is made at once, a file
// under a temporary name. A small file whose data and sum c brings
// whole goes to a worker, and begin reports it done.
func (r *Receiver) begin(e *wire.TransferEntry, c *wire.TransferChunk) (whole bool, err error) {
	if !validName(e.Name) {
		return false, &FileError{Name: e.Name, Err: ErrEscape}
	}
	name := e.Name
	if r.Rename != nil {
		if name = r.Rename(e.Name); !validName(name) {
			return false, &FileError{Name: name, Err: ErrEscape}
		}
	}
	if dir := path.Dir(name); dir != "." && dir != r.lastDir {
		if err := r.To.MkdirAll(dir, 0o700); err != nil {
			return false, &FileError{Name: name, Err: unwrapPath(err)}
		}
		r.lastDir = dir
	}
	small := e.Kind == wire.TransferEntry_FILE && len(c.Sha256) > 0 &&
		int64(len(c.Data)) == e.Size && e.Size <= smallFileMax
	if !small {
		// The last entry of a name wins, as it did when entries were
		// written one after the other.
		r.small.settle(name)
	}
	switch e.Kind {
	case wire.TransferEntry_DIR:
		if err := r.To.MkdirAll(name, 0o700); err != nil {
			return false, &FileError{Name: name, Err: unwrapPath(err)}
		}
		r.dirs = append(r.dirs, dirEntry{name: name, mode: fs.FileMode(e.Mode).Perm(), mtime: time.Unix(0, e.MtimeUnixNano)})
		return false, nil
	case wire.TransferEntry_SYMLINK:
		if !validLink(name, e.Link) {
			return false, &FileError{Name: name, Err: fmt.Errorf("symbolic link to %s %w", e.Link, ErrEscape)}
		}
		r.lastDir = "" // the link may take a directory's place
		if err := r.To.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, &FileError{Name: name, Err: unwrapPath(err)}
		}
		if err := r.To.Symlink(e.Link, name); err != nil {
			return false, &FileError{Name: name, Err: unwrapPath(err)}
		}
		return false, nil
	case wire.TransferEntry_FILE:
		if e.Size < 0 {
			return false, &FileError{Name: name, Err: ErrCorrupt}
		}
		if small {
			if r.Limit > 0 && r.taken+e.Size > r.Limit {
				return false, &FileError{Name: name, Err: fmt.Errorf("%w of %d MB", ErrTooLarge, r.Limit>>20)}
			}
			data := bytes.Clone(c.Data)
			if sum := sha256.Sum256(data); !bytes.Equal(sum[:], c.Sha256) {
				return false, &FileError{Name: name, Err: ErrCorrupt}
			}
			r.taken += e.Size
			r.small.write(r.To, smallFile{name: name, mode: fs.FileMode(e.Mode).Perm(), mtime: time.Unix(0, e.MtimeUnixNano), data: data})
			return true, nil
		}
		r.tmp = tempName(name)
		f, err := r.To.OpenFile(r.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return false, &FileError{Name: name, Err: unwrapPath(err)}
		}
		r.cur, r.curName, r.f, r.n = e, name, f, 0
		if r.h == nil {
			r.h = sha256.New()
		}
		r.h.Reset()
		return false, nil
	}
	return false, &FileError{Name: name, Err: ErrNotFile}
}

// end checks the file against its sum and puts it under its name.
func (r *Receiver) end(sum []byte) error {
	e, name := r.cur, r.curName
	if r.n != e.Size || !bytes.Equal(r.h.Sum(nil), sum) {
		return &FileError{Name: name, Err: ErrCorrupt}
	}
	f := r.f
	r.f = nil
	if err := place(r.To, f, r.tmp, name, fs.FileMode(e.Mode).Perm(), time.Unix(0, e.MtimeUnixNano)); err != nil {
		return &FileError{Name: name, Err: err}
	}
	r.Files++
	r.Bytes += r.n
	r.taken += r.n
	return nil
}

// place gives the file f, written whole under tmp, its mode and time,
// closes it and renames it to name; on failure it removes tmp and
// returns the system's error.
func place(to *os.Root, f *os.File, tmp, name string, mode fs.FileMode, mtime time.Time) error {
	err := f.Chmod(mode)
	if err == nil {
		err = to.Chtimes(tmp, mtime, mtime)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = to.Rename(tmp, name)
	}
	if err != nil {
		_ = to.Remove(tmp)
		return unwrapPath(err)
	}
	return nil
}

// smallFileMax bounds the files written by the workers, and with
// smallQueue the memory their data holds while queued (4 MiB).
const (
	smallFileMax = 64 << 10
	smallQueue   = 64
)

// smallFile is a whole small file, its data checked, on its way to a
// worker.
type smallFile struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	data  []byte
}

// smallWriters write small files on a few goroutines, started with the
// first file and stopped by wait or abort.
type smallWriters struct {
	work chan smallFile
	wg   sync.WaitGroup

	mu      sync.Mutex
	settled *sync.Cond          // broadcast as each file is done
	pending map[string]struct{} // names handed out and not yet done
	err     error               // the first failure
	stopped bool                // by abort: drop what is queued
	files   int
	bytes   int64
}

// write hands f to a worker, once no earlier file of the same name is
// pending.
func (s *smallWriters) write(to *os.Root, f smallFile) {
	if s.work == nil {
		s.start(to)
	}
	s.settle(f.name)
	s.mu.Lock()
	s.pending[f.name] = struct{}{}
	s.mu.Unlock()
	s.work <- f
}

func (s *smallWriters) start(to *os.Root) {
	s.work = make(chan smallFile, smallQueue)
	s.pending = map[string]struct{}{}
	s.settled = sync.NewCond(&s.mu)
	s.err, s.stopped = nil, false
	// Creates are CPU time in the kernel: as many as there are CPUs, and
	// one more to keep them busy while a write waits.
	for range min(runtime.GOMAXPROCS(0)+1, 8) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			w := &smallWriter{to: to}
			defer w.close()
			for f := range s.work {
				wrote, err := s.writeOne(w, f)
				s.done(f, wrote, err)
			}
		}()
	}
}

// writeOne writes f unless the stream has failed or been aborted.
func (s *smallWriters) writeOne(w *smallWriter, f smallFile) (wrote bool, err error) {
	s.mu.Lock()
	skip := s.stopped || s.err != nil
	s.mu.Unlock()
	if skip {
		return false, nil
	}
	err = w.write(f)
	return err == nil, err
}

func (s *smallWriters) done(f smallFile, wrote bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, f.name)
	s.settled.Broadcast()
	if err != nil && s.err == nil {
		s.err = err
	}
	if wrote {
		s.files++
		s.bytes += int64(len(f.data))
	}
}

// settle waits until no file of that name is pending.
func (s *smallWriters) settle(name string) {
	if s.work == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if _, ok := s.pending[name]; !ok {
			return
		}
		s.settled.Wait()
	}
}

// failed returns the first failure so far.
func (s *smallWriters) failed() error {
	if s.work == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// wait lets the workers write what is queued, stops them, and returns
// the files and bytes they wrote and their first failure.
func (s *smallWriters) wait() (files int, n int64, err error) {
	if s.work == nil {
		return 0, 0, nil
	}
	close(s.work)
	s.wg.Wait()
	s.work = nil
	files, n, err = s.files, s.bytes, s.err
	s.files, s.bytes = 0, 0
	return files, n, err
}

// abort stops the workers without writing what is queued.
func (s *smallWriters) abort() (files int, n int64) {
	if s.work == nil {
		return 0, 0
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	files, n, _ = s.wait()
	return files, n
}

// smallWriter is one worker's: it creates each file in a directory of
// its own, then renames it into place. Creates in one directory are
// made one at a time (the kernel locks the directory for them), and a
// stream sends a directory's files one after the other: the workers'
// creates go side by side only in directories apart.
type smallWriter struct {
	to *os.Root
	// stage is the worker's directory at the top of to, made with its
	// first file and removed, empty, by close.
	stage     *os.File
	stageName string
	noStage   bool
	// dir is the directory of the files last written, kept open.
	dir     *os.File
	dirName string
}

func (w *smallWriter) write(f smallFile) error {
	if w.stage == nil && !w.noStage {
		// Where the top of the tree takes no directory of ours (not
		// writable, say), files are written beside their names.
		w.noStage = w.makeStage() != nil
	}
	if w.noStage {
		return w.writeBeside(f)
	}
	dir, err := w.openDir(path.Dir(f.name))
	if err != nil {
		return &FileError{Name: f.name, Err: unwrapPath(err)}
	}
	err = writeWhole(w.stage, dir, path.Base(f.name), f)
	if errors.Is(err, unix.EXDEV) {
		return w.writeBeside(f)
	}
	if err != nil {
		return &FileError{Name: f.name, Err: err}
	}
	return nil
}

// writeBeside writes f under a temporary name beside its own, for a
// directory on another file system than the top of the tree.
func (w *smallWriter) writeBeside(f smallFile) error {
	tmp := tempName(f.name)
	file, err := w.to.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return &FileError{Name: f.name, Err: unwrapPath(err)}
	}
	if _, err := file.Write(f.data); err != nil {
		file.Close()
		_ = w.to.Remove(tmp)
		return &FileError{Name: f.name, Err: unwrapPath(err)}
	}
	if err := place(w.to, file, tmp, f.name, f.mode, f.mtime); err != nil {
		return &FileError{Name: f.name, Err: err}
	}
	return nil
}

// openDir returns dir beneath to, opened (and so confined) by to.
func (w *smallWriter) openDir(dir string) (*os.File, error) {
	if w.dir != nil && w.dirName == dir {
		return w.dir, nil
	}
	if w.dir != nil {
		w.dir.Close()
		w.dir = nil
	}
	d, err := w.to.Open(dir)
	if err != nil {
		return nil, err
	}
	w.dir, w.dirName = d, dir
	return d, nil
}

func (w *smallWriter) makeStage() error {
	name := tempName("stage")
	if err := w.to.Mkdir(name, 0o700); err != nil {
		return err
	}
	d, err := w.to.Open(name)
	if err != nil {
		_ = w.to.Remove(name)
		return err
	}
	w.stage, w.stageName = d, name
	return nil
}

func (w *smallWriter) close() {
	if w.dir != nil {
		w.dir.Close()
	}
	if w.stage != nil {
		w.stage.Close()
		_ = w.to.Remove(w.stageName)
	}
}

// writeWhole writes f in the directory stage under a temporary name,
// renamed to base in dir once whole. The names are single elements and
// the directories were opened beneath the receiver's root: nothing is
// resolved outside it.
func writeWhole(stage, dir *os.File, base string, f smallFile) error {
	sfd, dfd := int(stage.Fd()), int(dir.Fd())
	tmp := tempName(base)
	fd, err := unix.Openat(sfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), tmp)
	_, err = file.Write(f.data)
	if err == nil {
		err = file.Chmod(f.mode)
	}
	if err == nil {
		t := unix.NsecToTimespec(f.mtime.UnixNano())
		err = unix.UtimesNanoAt(sfd, tmp, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(sfd, tmp, dfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(sfd, tmp, 0)
		return unwrapPath(err)
	}
	return nil
}

// validName accepts relative slash-separated names with no empty, "." or
// ".." element.
func validName(name string) bool {
	if name == "" || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "/") {
		return false
	}
	for e := range strings.SplitSeq(name, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// validLink accepts the target of the link name when it stays inside the
// tree: relative, some ".." first, no more of them than name has
// directories above it, then plain names. Climbing only first, from the
// link's own directory, means a target cannot climb out through another
// link, which is held to the same rule.
func validLink(name, target string) bool {
	if target == "" || strings.ContainsRune(target, 0) || path.IsAbs(target) {
		return false
	}
	depth := strings.Count(name, "/")
	elems := strings.Split(target, "/")
	up := 0
	for up < len(elems) && elems[up] == ".." {
		up++
	}
	if up > depth {
		return false
	}
	for _, e := range elems[up:] {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// Copy copies name beneath from (a file, or a directory with what it
// holds; "." for all of from) to the same name beneath to, as a stream
// between a Sender and a Receiver in this process, and returns how many
// files and bytes it copied.
func Copy(from, to *os.Root, name string, leaveOutLinks bool) (files int, n int64, err error) {
	r := &Receiver{To: to}
	s := &Sender{Out: r.Chunk, LeaveOutLinks: leaveOutLinks}
	as := name
	if name == "." {
		as = ""
	}
	if err := s.Send(from, name, as); err != nil {
		r.Abort()
		return 0, 0, err
	}
	if err := r.Close(); err != nil {
		return 0, 0, err
	}
	return r.Files, r.Bytes, nil
}

// WriteFile writes what r holds to name beneath to, under a temporary
// name renamed once whole, and returns its size.
func WriteFile(to *os.Root, name string, r io.Reader, perm fs.FileMode) (int64, error) {
	if !validName(name) {
		return 0, &FileError{Name: name, Err: ErrEscape}
	}
	tmp := tempName(name)
	f, err := to.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, &FileError{Name: name, Err: unwrapPath(err)}
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = to.Rename(tmp, name)
	}
	if err != nil {
		_ = to.Remove(tmp)
		return 0, &FileError{Name: name, Err: unwrapPath(err)}
	}
	return n, nil
}

// tempName is a new name beside name for its data on the way: hidden,
// and marked as the transfer's (the starter leaves such names out of a
// job's outputs).
func tempName(name string) string {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return path.Join(path.Dir(name), ".harrier-transfer-"+hex.EncodeToString(rnd[:]))
}

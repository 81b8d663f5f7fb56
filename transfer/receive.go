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
	"strings"
	"time"

	"harrier.dev/harrier/wire"
)

// Receiver writes the entries of a stream beneath To, chunk by chunk
// (Chunk), and finishes with Close.
type Receiver struct {
	To *os.Root
	// Limit, if positive, bounds the bytes of the files received.
	Limit int64
	// Rename, if set, gives an entry's name where it is written (HTCondor's
	// transfer_output_remaps); the result is held to the same rules.
	Rename func(name string) string
	// Files and Bytes count the files written and their data.
	Files int
	Bytes int64

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
	if e := c.Entry; e != nil {
		if r.f != nil {
			return r.fail(&FileError{Name: r.cur.Name, Err: errors.New("cut short by the next entry")})
		}
		if err := r.begin(e); err != nil {
			return r.fail(err)
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
		if r.Limit > 0 && r.Bytes+r.n > r.Limit {
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

// Close finishes the stream: it fails if a file was cut short, and gives
// the directories received their permissions and times.
func (r *Receiver) Close() error {
	if r.f != nil {
		return r.fail(&FileError{Name: r.cur.Name, Err: errors.New("the stream ended in the middle of it")})
	}
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

// Abort removes the temporary file of a stream that will not go on.
func (r *Receiver) Abort() {
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
// under a temporary name.
func (r *Receiver) begin(e *wire.TransferEntry) error {
	if !validName(e.Name) {
		return &FileError{Name: e.Name, Err: ErrEscape}
	}
	name := e.Name
	if r.Rename != nil {
		if name = r.Rename(e.Name); !validName(name) {
			return &FileError{Name: name, Err: ErrEscape}
		}
	}
	if dir := path.Dir(name); dir != "." {
		if err := r.To.MkdirAll(dir, 0o700); err != nil {
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
	}
	switch e.Kind {
	case wire.TransferEntry_DIR:
		if err := r.To.MkdirAll(name, 0o700); err != nil {
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
		r.dirs = append(r.dirs, dirEntry{name: name, mode: fs.FileMode(e.Mode).Perm(), mtime: time.Unix(0, e.MtimeUnixNano)})
		return nil
	case wire.TransferEntry_SYMLINK:
		if !validLink(name, e.Link) {
			return &FileError{Name: name, Err: fmt.Errorf("symbolic link to %s %w", e.Link, ErrEscape)}
		}
		if err := r.To.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
		if err := r.To.Symlink(e.Link, name); err != nil {
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
		return nil
	case wire.TransferEntry_FILE:
		if e.Size < 0 {
			return &FileError{Name: name, Err: ErrCorrupt}
		}
		r.tmp = tempName(name)
		f, err := r.To.OpenFile(r.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
		r.cur, r.curName, r.f, r.n = e, name, f, 0
		if r.h == nil {
			r.h = sha256.New()
		}
		r.h.Reset()
		return nil
	}
	return &FileError{Name: name, Err: ErrNotFile}
}

// end checks the file against its sum and puts it under its name.
func (r *Receiver) end(sum []byte) error {
	e, name := r.cur, r.curName
	if r.n != e.Size || !bytes.Equal(r.h.Sum(nil), sum) {
		return &FileError{Name: name, Err: ErrCorrupt}
	}
	err := r.f.Chmod(fs.FileMode(e.Mode).Perm())
	if err == nil {
		t := time.Unix(0, e.MtimeUnixNano)
		err = r.To.Chtimes(r.tmp, t, t)
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err == nil {
		err = r.To.Rename(r.tmp, name)
	}
	if err != nil {
		_ = r.To.Remove(r.tmp)
		return &FileError{Name: name, Err: unwrapPath(err)}
	}
	r.Files++
	r.Bytes += r.n
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

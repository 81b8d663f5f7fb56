package transfer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"

	"harrier.dev/harrier/wire"
)

// ChunkSize bounds the data of one chunk.
const ChunkSize = 1 << 20

// Sentinel errors, wrapped in a *FileError that names the file.
var (
	// ErrEscape: a name or a link target that leaves the tree.
	ErrEscape = errors.New("leaves the job's directory")
	// ErrCorrupt: a file whose data does not match its size or SHA-256.
	ErrCorrupt = errors.New("arrived corrupt (size or SHA-256 mismatch)")
	// ErrTooLarge: the files hold more bytes than the limit.
	ErrTooLarge = errors.New("over the transfer size limit")
	// ErrNotFile: neither a regular file, a directory nor a link.
	ErrNotFile = errors.New("not a regular file, directory or symbolic link")
)

// FileError is a transfer's failure on one file.
type FileError struct {
	Name string
	Err  error
}

func (e *FileError) Error() string { return e.Name + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Sender emits the entries of trees to Out, counting what it sent.
// Without Buffers it reuses one buffer for the data of its chunks: Out
// must not retain a chunk after it returns.
type Sender struct {
	Out func(*wire.TransferChunk) error
	// Buffers, if set, lends each chunk's data buffer, which Out's codec
	// sends without a copy and takes back once sent (see wire.Buffers):
	// Out must go through a codec with these buffers.
	Buffers *wire.Buffers
	// LeaveOutLinks skips symbolic links instead of sending them.
	LeaveOutLinks bool
	// LeaveOut names entries at the top of a directory sent whole
	// (Send's name ".") that are not sent, nor anything beneath them.
	LeaveOut []string
	// Files and Bytes count the files sent and their data.
	Files int
	Bytes int64

	buf []byte
	// first, if set, goes out with the first chunk (a secret, say).
	first *wire.TransferChunk
}

// SendFirst makes c the stream's first chunk: the first entry's chunk is
// merged into it, or c goes out alone at Flush if nothing was sent.
func (s *Sender) SendFirst(c *wire.TransferChunk) { s.first = c }

// Flush sends the chunk given to SendFirst if it has not gone out yet.
func (s *Sender) Flush() error {
	if s.first == nil {
		return nil
	}
	return s.send(&wire.TransferChunk{})
}

func (s *Sender) send(c *wire.TransferChunk) error {
	if s.first != nil {
		f := s.first
		s.first = nil
		f.Entry, f.Data, f.Sha256 = c.Entry, c.Data, c.Sha256
		c = f
	}
	return s.Out(c)
}

// Send sends name, a file, directory or link beneath from ("." for the
// whole of from), as the entry as and, for a directory, everything in it
// below as; with as empty the directory's contents go at the top of the
// stream (HTCondor's "dir/").
func (s *Sender) Send(from *os.Root, name, as string) error {
	if s.buf == nil && s.Buffers == nil {
		s.buf = make([]byte, ChunkSize)
	}
	return fs.WalkDir(from.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &FileError{Name: p, Err: unwrapPath(err)}
		}
		rel := p
		if name != "." {
			rel, _ = filepath.Rel(name, p)
		}
		dest := path.Join(as, filepath.ToSlash(rel))
		if dest == "." || dest == "" {
			return nil // the top of the stream
		}
		if name == "." && slices.Contains(s.LeaveOut, p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return &FileError{Name: p, Err: unwrapPath(err)}
		}
		e := &wire.TransferEntry{Name: dest, Mode: uint32(info.Mode().Perm()), MtimeUnixNano: info.ModTime().UnixNano()}
		switch {
		case d.IsDir():
			e.Kind = wire.TransferEntry_DIR
			return s.send(&wire.TransferChunk{Entry: e})
		case d.Type()&fs.ModeSymlink != 0:
			if s.LeaveOutLinks {
				return nil
			}
			target, err := from.Readlink(p)
			if err != nil {
				return &FileError{Name: p, Err: unwrapPath(err)}
			}
			// A link is checked against where it lands: a top-level link
			// may point at its siblings, one in a directory one up.
			if !validLink(dest, target) {
				return &FileError{Name: p, Err: fmt.Errorf("symbolic link to %s %w", target, ErrEscape)}
			}
			e.Kind, e.Link = wire.TransferEntry_SYMLINK, target
			return s.send(&wire.TransferChunk{Entry: e})
		case d.Type().IsRegular():
			e.Size = info.Size()
			return s.file(from, p, e)
		}
		return &FileError{Name: p, Err: ErrNotFile}
	})
}

// file sends one regular file: its entry with the first data, then the
// rest, the last chunk carrying the SHA-256 of what was read.
func (s *Sender) file(from *os.Root, name string, e *wire.TransferEntry) error {
	// Non-blocking, and checked once open: a FIFO put in the file's place
	// since it was listed must not hang the sender (the agent reads its
	// users' spooled outputs as root).
	f, err := from.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &FileError{Name: name, Err: unwrapPath(err)}
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return &FileError{Name: name, Err: ErrNotFile}
	}
	h := sha256.New()
	var n int64
	c := &wire.TransferChunk{Entry: e}
	for {
		buf := s.buf
		if s.Buffers != nil {
			buf = s.Buffers.Get(ChunkSize)
		}
		k, err := io.ReadFull(f, buf)
		if s.Buffers != nil && k == 0 {
			s.Buffers.Put(buf) // no data to carry
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			if k > 0 && s.Buffers != nil {
				s.Buffers.Put(buf)
			}
			return &FileError{Name: name, Err: unwrapPath(err)}
		}
		h.Write(buf[:k])
		n += int64(k)
		c.Data = nil
		if k > 0 {
			c.Data = buf[:k]
		}
		last := err != nil
		if last {
			if n != e.Size {
				if k > 0 && s.Buffers != nil {
					s.Buffers.Put(buf)
				}
				return &FileError{Name: name, Err: fmt.Errorf("changed while it was sent (%d bytes, then %d)", e.Size, n)}
			}
			c.Sha256 = h.Sum(nil)
		}
		if serr := s.send(c); serr != nil {
			return serr
		}
		if last {
			break
		}
		c = &wire.TransferChunk{}
	}
	s.Files++
	s.Bytes += n
	return nil
}

// unwrapPath drops an *fs.PathError's operation and path: the FileError
// around it names the file as the job knows it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

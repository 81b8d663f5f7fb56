package iofs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// staged serves the fetch and compress methods: the whole file is copied
// (and, for compress, decompressed) into a private local file at open, the
// job works on that copy, and at close (or fsync) a changed copy is written
// back whole (compressed again for compress).
type staged struct {
	inner handle
	gzip  bool
	tmp   *os.File

	mu    sync.Mutex // guards dirty and serialises write-back
	dirty bool
}

// chunk is the size of the pieces staging moves through an inner handle.
const chunk = 1 << 20

// newStaged stages inner in dir. With empty set (O_TRUNC, or a new file)
// nothing is fetched.
func newStaged(ctx context.Context, inner handle, dir string, gz, empty bool) (*staged, error) {
	tmp, err := os.CreateTemp(dir, "iofs-stage-")
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	os.Remove(tmp.Name()) // only the descriptor is needed
	s := &staged{inner: inner, gzip: gz, tmp: tmp}
	if !empty {
		if err := s.fetch(ctx); err != nil {
			tmp.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *staged) fetch(ctx context.Context) error {
	var src io.Reader = &handleReader{ctx: ctx, h: s.inner}
	if s.gzip {
		br := &peekReader{r: src}
		if br.empty() {
			return nil // an empty file stands for empty contents
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("stage: decompress: %v: %w", err, syscall.EIO)
		}
		defer zr.Close()
		src = zr
	}
	if _, err := io.Copy(s.tmp, src); err != nil {
		return fmt.Errorf("stage: fetch: %w", errnoOr(err, syscall.EIO))
	}
	return nil
}

func (s *staged) ReadAt(_ context.Context, dest []byte, off int64) ([]byte, error) {
	n, err := s.tmp.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return dest[:n], nil
}

func (s *staged) WriteAt(_ context.Context, data []byte, off int64) (int, error) {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
	return s.tmp.WriteAt(data, off)
}

func (s *staged) Truncate(_ context.Context, size int64) error {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
	return s.tmp.Truncate(size)
}

func (s *staged) Stat(ctx context.Context) (Attr, error) {
	a, err := s.inner.Stat(ctx)
	if err != nil {
		return Attr{}, err
	}
	st, err := s.tmp.Stat()
	if err != nil {
		return Attr{}, err
	}
	a.Size = uint64(st.Size())
	a.Blocks = (a.Size + 511) / 512
	return a, nil
}

// Flush writes a changed copy back.
func (s *staged) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	if err := s.inner.Truncate(ctx, 0); err != nil {
		return err
	}
	w := &handleWriter{ctx: ctx, h: s.inner}
	src := io.NewSectionReader(s.tmp, 0, 1<<62)
	if s.gzip {
		zw := gzip.NewWriter(w)
		if _, err := io.Copy(zw, src); err != nil {
			return errnoOr(err, syscall.EIO)
		}
		if err := zw.Close(); err != nil {
			return errnoOr(err, syscall.EIO)
		}
	} else if _, err := io.Copy(w, src); err != nil {
		return errnoOr(err, syscall.EIO)
	}
	s.dirty = false
	return s.inner.Flush(ctx)
}

func (s *staged) Sync(ctx context.Context) error {
	if err := s.Flush(ctx); err != nil {
		return err
	}
	return s.inner.Sync(ctx)
}

func (s *staged) Close(ctx context.Context) error {
	err := s.Flush(ctx)
	return errors.Join(err, s.inner.Close(ctx), s.tmp.Close())
}

// handleReader reads a handle from the start, in chunks.
type handleReader struct {
	ctx context.Context
	h   handle
	off int64
	buf []byte
}

func (r *handleReader) Read(p []byte) (int, error) {
	if r.buf == nil {
		r.buf = make([]byte, chunk)
	}
	data, err := r.h.ReadAt(r.ctx, r.buf[:min(len(p), chunk)], r.off)
	if err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, data)
	r.off += int64(n)
	return n, nil
}

// peekReader tells whether a reader has any bytes without losing them.
type peekReader struct {
	r     io.Reader
	first []byte
}

func (p *peekReader) empty() bool {
	buf := make([]byte, 1)
	// A read error shows again at the next Read.
	n, _ := io.ReadFull(p.r, buf)
	p.first = buf[:n]
	return n == 0
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// handleWriter writes a handle from the start.
type handleWriter struct {
	ctx context.Context
	h   handle
	off int64
}

func (w *handleWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := w.h.WriteAt(w.ctx, p[done:min(len(p), done+chunk)], w.off)
		done += n
		w.off += int64(n)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// errnoOr keeps an errno in err, or wraps err with def.
func errnoOr(err error, def syscall.Errno) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("%v: %w", err, def)
}

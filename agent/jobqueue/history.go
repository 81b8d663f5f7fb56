package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"harrier.dev/harrier/classad"
)

// history is the file of ads of jobs that left the queue: one frame per
// AppendHistory call, appended and synced under a mutex. Appends are far
// rarer than queue edits, so they do without group commit.
type history struct {
	mu     sync.Mutex
	f      *os.File
	size   int64 // bytes of whole frames
	noSync bool
}

func (h *history) open(dir string, noSync bool, log *slog.Logger) error {
	path := filepath.Join(dir, historyName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	end, err := frames(f, func([]byte, int64) error { return nil })
	if errors.Is(err, errBadFrame) {
		if err = checkTail(f, end, true); err == nil {
			log.Warn("truncated torn history tail", "file", path, "offset", end)
		}
	}
	if err == nil {
		_, err = f.Seek(end, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return err
	}
	h.f, h.size, h.noSync = f, end, noSync
	return nil
}

func (h *history) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// AppendHistory implements [HistoryStore]. The ads are appended as one
// unit: after a crash all of them are in the history or none is.
//
// A job that leaves the queue should be appended here before its Destroy
// is committed: a crash between the two then leaves the job in the queue
// to be retired again, at worst recording it twice, rather than losing it.
func (l *Log) AppendHistory(ctx context.Context, ads ...*classad.ClassAd) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var enc encoder
	enc.buf, _ = beginFrame(nil)
	for _, ad := range ads {
		if ad == nil {
			return errors.New("append history: nil ad")
		}
		enc.ad(ad, opHistoryAd, opHistoryAdLike, nil)
	}
	if err := finishFrame(enc.buf, 0); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	h := &l.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return fmt.Errorf("append history: %w", ErrClosed)
	}
	n, err := h.f.Write(enc.buf)
	if err == nil && !h.noSync {
		err = fdatasync(h.f)
	}
	if err != nil {
		// Cut off what was written, so the next append does not follow
		// a partial frame.
		if terr := h.f.Truncate(h.size); terr == nil {
			_, terr = h.f.Seek(h.size, io.SeekStart)
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("append history: %w", err)
	}
	h.size += int64(n)
	return nil
}

// History implements [HistoryStore]: ads come oldest first, each a fresh
// copy the caller may keep. Ads appended while it runs may be left out.
func (l *Log) History(fn func(ad *classad.ClassAd) bool) error {
	h := &l.history
	h.mu.Lock()
	if h.f == nil {
		h.mu.Unlock()
		return fmt.Errorf("history: %w", ErrClosed)
	}
	size := h.size
	path := h.f.Name()
	h.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	fr := frameReader{r: io.LimitReader(f, size), limit: size}
	for {
		payload, off, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("history: %w", &CorruptError{File: path, Offset: off, Reason: err.Error()})
		}
		d := newDecoder(payload)
		for d.more() {
			op, err := d.op()
			if err == nil && op.kind != opHistoryAd {
				err = fmt.Errorf("operation %s does not belong in the history", op.kind)
			}
			if err != nil {
				return fmt.Errorf("history: %w", &CorruptError{File: path, Offset: off, Reason: err.Error()})
			}
			if !fn(op.ad.Copy()) { // op.ad is the base of the next ad decoded
				return nil
			}
		}
	}
}

package jobqueue

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"harrier.dev/harrier/classad"
)

// history is the file of ads of jobs that left the queue. The log is the
// truth: an OpRetire is committed there, numbered (opHistorySeq), and the
// committer then appends its ad to this file, under the same number,
// before the Commit returns. A crash in between leaves the record in the
// log only, and recovery appends it here; a write that fails (a full
// disk) keeps the records in memory, where History sees them, until a
// later write succeeds. Either way a retired job is in exactly one of the
// queue and the history.
type history struct {
	f      *os.File // open for appending
	noSync bool
	buf    []byte // the committer's encoding buffer

	// mu guards size and pending, which History reads; only the
	// committer (and Open and Close around it) changes them.
	mu      sync.Mutex
	size    int64           // bytes of f that hold whole frames
	pending []historyRecord // committed, not yet in f: numbered from next

	// next is the number of the record that follows the last one in f;
	// dirty means f may hold bytes past size from a failed write.
	next  int
	dirty bool
}

// historyRecord is one retired job's ad and its record number.
type historyRecord struct {
	seq int
	ad  *classad.ClassAd
}

// historyFrameBytes is the payload size at which a write starts a new
// frame, so that a long backlog of records is not one huge frame.
const historyFrameBytes = 1 << 20

// open opens the history file in dir, cuts off a torn tail and reads the
// number that follows its last record. A file written before records were
// numbered starts the numbering at 0.
func (h *history) open(dir string, noSync bool, log *slog.Logger) error {
	path := filepath.Join(dir, historyName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	var last []byte
	end, err := frames(f, func(payload []byte, _ int64) error {
		last = append(last[:0], payload...)
		return nil
	})
	if errors.Is(err, errBadFrame) {
		if err = checkTail(f, end, true); err == nil {
			log.Warn("truncated torn history tail", "file", path, "offset", end)
		}
	}
	next := 0
	if err == nil && last != nil {
		next, err = lastNumber(last)
		if err != nil {
			err = &CorruptError{File: path, Offset: end, Reason: err.Error()}
		}
	}
	if err != nil {
		f.Close()
		return err
	}
	h.f, h.size, h.next, h.noSync = f, end, next, noSync
	return nil
}

// lastNumber returns the number that follows the records of a history
// frame, or 0 for a frame written before records were numbered.
func lastNumber(payload []byte) (int, error) {
	d := newDecoder(payload)
	n, numbered := 0, false
	for d.more() {
		op, err := d.op()
		if err != nil {
			return 0, err
		}
		switch op.kind {
		case opHistorySeq:
			n, numbered = op.id.Cluster, true
		case opHistoryAd:
			n++
		default:
			return 0, fmt.Errorf("operation %s does not belong in the history", op.kind)
		}
	}
	if !numbered {
		return 0, nil
	}
	return n, nil
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

// write appends the pending records and then recs, which must number on
// from them, and syncs the file. It runs on the committer. On failure the
// file is cut back and every record stays pending, to be written by the
// next call; the log still holds them, so they are durable either way.
func (h *history) write(recs []historyRecord) error {
	h.mu.Lock()
	all := append(h.pending, recs...)
	h.pending = all
	h.mu.Unlock()
	if len(all) == 0 {
		return nil
	}
	if h.dirty {
		if err := h.f.Truncate(h.size); err != nil {
			return fmt.Errorf("write history: undo failed write: %w", err)
		}
		h.dirty = false
	}
	var enc encoder
	enc.buf = h.buf[:0]
	for i := 0; i < len(all); {
		var start int
		enc.buf, start = beginFrame(enc.buf)
		enc.reset()
		enc.op(Op{kind: opHistorySeq, id: JobID{Cluster: all[i].seq}})
		for ; i < len(all) && len(enc.buf)-start < historyFrameBytes; i++ {
			enc.ad(all[i].ad, opHistoryAd, opHistoryAdLike, nil)
		}
		if err := finishFrame(enc.buf, start); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
	}
	if cap(enc.buf) <= 4<<20 {
		h.buf = enc.buf[:0]
	}
	_, err := h.f.Write(enc.buf)
	if err == nil && !h.noSync {
		err = fdatasync(h.f)
	}
	if err != nil {
		// Cut off what was written, so that the next write does not
		// follow a partial frame.
		h.dirty = true
		if terr := h.f.Truncate(h.size); terr == nil {
			h.dirty = false
		}
		return fmt.Errorf("write history: %w", err)
	}
	h.mu.Lock()
	h.size += int64(len(enc.buf))
	h.pending = nil
	h.mu.Unlock()
	h.next = all[len(all)-1].seq + 1
	return nil
}

// History implements [HistoryStore]: ads come oldest first, each a fresh
// copy the caller may keep. Ads retired while it runs may be left out.
func (l *Log) History(fn func(ad *classad.ClassAd) bool) error {
	h := &l.history
	h.mu.Lock()
	if h.f == nil {
		h.mu.Unlock()
		return fmt.Errorf("history: %w", ErrClosed)
	}
	size := h.size
	pending := h.pending
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
			break
		}
		if err != nil {
			return fmt.Errorf("history: %w", &CorruptError{File: path, Offset: off, Reason: err.Error()})
		}
		d := newDecoder(payload)
		for d.more() {
			op, err := d.op()
			if err == nil && op.kind != opHistoryAd && op.kind != opHistorySeq {
				err = fmt.Errorf("operation %s does not belong in the history", op.kind)
			}
			if err != nil {
				return fmt.Errorf("history: %w", &CorruptError{File: path, Offset: off, Reason: err.Error()})
			}
			if op.kind == opHistoryAd && !fn(op.ad.Copy()) { // op.ad is the base of the next ad decoded
				return nil
			}
		}
	}
	// Records not yet written to the file are the newest.
	for _, r := range pending {
		if !fn(r.ad.Copy()) {
			return nil
		}
	}
	return nil
}

// writeHistory writes history records on the committer. A failure is
// logged, not returned: the retirements are durable in the log already,
// and the records stay pending (visible to History) until a write
// succeeds.
func (l *Log) writeHistory(recs []historyRecord) {
	if err := l.history.write(recs); err != nil {
		l.log.Error("history records kept in memory until the history file can be written", "records", len(l.history.pending), "err", err)
	}
}

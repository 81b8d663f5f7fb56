package dagman

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"harrier.dev/harrier/joblog"
)

// logTail reads a job event log as it grows, whole events only. It keeps
// the log open between reads.
type logTail struct {
	path string
	f    *os.File
	off  int64  // where the next unread event starts
	rest []byte // bytes read after the last whole event
	buf  []byte
}

// terminator ends every event.
var terminator = []byte("\n...\n")

// read calls f with each whole event appended since the last read.
func (t *logTail) read(f func(joblog.Event)) error {
	if t.f == nil {
		fh, err := os.Open(t.path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the nodes log: %w", err)
		}
		if _, err := fh.Seek(t.off+int64(len(t.rest)), io.SeekStart); err != nil {
			fh.Close()
			return fmt.Errorf("read the nodes log: %w", err)
		}
		t.f = fh
		t.buf = make([]byte, 1<<20)
	}
	for {
		n, err := t.f.Read(t.buf)
		if n > 0 {
			t.rest = append(t.rest, t.buf[:n]...)
			if err := t.parse(f); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the nodes log: %w", err)
		}
	}
}

func (t *logTail) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// parse hands on the whole events in rest and keeps the partial one.
func (t *logTail) parse(f func(joblog.Event)) error {
	end := bytes.LastIndex(t.rest, terminator)
	if end < 0 {
		return nil
	}
	end += len(terminator)
	events, err := joblog.Parse(t.rest[:end])
	if err != nil {
		return fmt.Errorf("the nodes log %s at byte %d: %w", t.path, t.off, err)
	}
	for _, ev := range events {
		f(ev)
	}
	t.off += int64(end)
	t.rest = append(t.rest[:0], t.rest[end:]...)
	return nil
}

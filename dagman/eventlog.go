package dagman

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"harrier.dev/harrier/joblog"
)

// logTail reads a job event log as it grows, whole events only.
type logTail struct {
	path string
	off  int64  // where the next unread event starts
	rest []byte // bytes read after the last whole event
	buf  []byte
}

// terminator ends every event.
var terminator = []byte("\n...\n")

// read calls f with each whole event appended since the last read.
func (t *logTail) read(f func(joblog.Event)) error {
	fh, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the nodes log: %w", err)
	}
	defer fh.Close()
	if _, err := fh.Seek(t.off+int64(len(t.rest)), io.SeekStart); err != nil {
		return fmt.Errorf("read the nodes log: %w", err)
	}
	if t.buf == nil {
		t.buf = make([]byte, 1<<20)
	}
	for {
		n, err := fh.Read(t.buf)
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

// parse hands on the whole events in rest and keeps the partial one.
func (t *logTail) parse(f func(joblog.Event)) error {
	end := bytes.LastIndex(t.rest, terminator)
	if end < 0 {
		return nil
	}
	end += len(terminator)
	events, err := joblog.Read(bytes.NewReader(t.rest[:end]))
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

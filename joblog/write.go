package joblog

import (
	"fmt"
	"os"
	"strings"
)

// Append adds one event to the log at path, creating it (mode 0644) if
// needed. The event is on disk when Append returns.
func Append(path string, e Event) error {
	return appendText(path, e.Format(), true)
}

// AppendNoSync is Append without the fsync, for logs whose loss in a
// machine crash is acceptable.
func AppendNoSync(path string, e Event) error {
	return appendText(path, e.Format(), false)
}

func appendText(path, text string, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open job event log: %w", err)
	}
	if err := write(f, text, sync); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AppendFile appends events to a log the caller opened with O_APPEND (a
// daemon opens a user's log with the user's permissions), in one write,
// and syncs it once; it does not close f.
func AppendFile(f *os.File, events ...Event) error {
	if len(events) == 1 {
		return write(f, events[0].Format(), true)
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e.Format())
	}
	return write(f, b.String(), true)
}

func write(f *os.File, text string, sync bool) error {
	// One write: concurrent writers with O_APPEND never interleave within it.
	if _, err := f.Write([]byte(text)); err != nil {
		return fmt.Errorf("write job event log %s: %w", f.Name(), err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync job event log %s: %w", f.Name(), err)
		}
	}
	return nil
}

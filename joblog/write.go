package joblog

import (
	"fmt"
	"os"
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
	// One write: concurrent writers with O_APPEND never interleave within it.
	if _, err := f.Write([]byte(text)); err != nil {
		f.Close()
		return fmt.Errorf("write job event log %s: %w", path, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync job event log %s: %w", path, err)
		}
	}
	return f.Close()
}

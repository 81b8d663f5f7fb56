package reservation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"harrier.dev/harrier/atomicfile"
)

// format is the version of a book's file; a file of another version is
// refused rather than misread.
const format = 1

// state is what a book keeps on disk.
type state struct {
	Format       int           `json:"format"`
	Next         int64         `json:"next"`
	Reservations []Reservation `json:"reservations"`
}

// load reads the book's file; a missing one is an empty book.
func load(path string) (state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("reservations: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("reservations %s: %w", path, err)
	}
	if st.Format != format {
		return state{}, fmt.Errorf("reservations %s: format %d, want %d", path, st.Format, format)
	}
	return st, nil
}

// save replaces the book's file with st: written to a temporary file,
// synced, renamed over it and the directory synced, so that a crash
// leaves the old book or the new one, never a mixture.
func save(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "\t")
	if err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("reservations: save: %w", err)
	}
	return nil
}

package reservation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, there is nothing there
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("reservations: save %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("reservations: sync %s: %w", dir, err)
	}
	return nil
}

// Package atomicfile replaces small files whole: a reader, or the program
// after a crash, finds the old file or the complete new one, never a
// mixture. It is for state kept across restarts (keys, records, flags),
// not for large data.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, with mode mode. The data goes to a
// temporary file beside path, created with mode 0600 (so a secret is
// never readable by others, even for an instant), synced, given mode,
// and renamed over path; then the directory is synced, so the new file
// outlasts a crash.
func Write(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, os.Rename)
}

// Create is Write for a file that must not exist yet: it fails, leaving
// the existing file alone, if path exists (fs.ErrExist).
func Create(path string, data []byte, mode os.FileMode) error {
	// A hard link fails if path exists, where rename would replace it.
	return write(path, data, mode, os.Link)
}

func write(path string, data []byte, mode os.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	// After a rename nothing is there; after a link, the name goes.
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := place(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

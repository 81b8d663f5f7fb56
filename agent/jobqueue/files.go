package jobqueue

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// File names in a store directory. Generations count up from 1.
const (
	snapshotPrefix = "snapshot."
	logPrefix      = "log."
	tmpSuffix      = ".tmp"
	historyName    = "history"
	lockName       = "LOCK"
)

func snapshotName(gen uint64) string { return snapshotPrefix + strconv.FormatUint(gen, 10) }
func logName(gen uint64) string      { return logPrefix + strconv.FormatUint(gen, 10) }

// parseGen returns the generation in a name such as "log.12".
func parseGen(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || rest[0] == '+' {
		return 0, false
	}
	gen, err := strconv.ParseUint(rest, 10, 64)
	return gen, err == nil && gen > 0
}

// fileSet is the log being appended to.
type fileSet struct {
	dir     string
	f       *os.File // log.gen, open for appending
	gen     uint64
	snapGen uint64 // newest complete snapshot, 0 if none
}

// append writes b to the current log and, unless noSync, waits until it
// is on disk. fdatasync suffices: it also writes the new file size.
func (fs *fileSet) append(b []byte, noSync bool) error {
	if _, err := fs.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", fs.f.Name(), err)
	}
	if noSync {
		return nil
	}
	if err := fdatasync(fs.f); err != nil {
		return fmt.Errorf("sync %s: %w", fs.f.Name(), err)
	}
	return nil
}

// rotate starts log gen+1, durably, and makes it the current log.
func (fs *fileSet) rotate(noSync bool) error {
	f, err := createLog(fs.dir, fs.gen+1, noSync)
	if err != nil {
		return err
	}
	old := fs.f
	fs.f, fs.gen = f, fs.gen+1
	if err := old.Close(); err != nil {
		return fmt.Errorf("close %s: %w", old.Name(), err)
	}
	return nil
}

func (fs *fileSet) close() error {
	if fs.f == nil {
		return nil
	}
	err := fs.f.Close()
	fs.f = nil
	return err
}

// createLog creates an empty log file and makes its name durable.
func createLog(dir string, gen uint64, noSync bool) (*os.File, error) {
	path := filepath.Join(dir, logName(gen))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	if !noSync {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// syncDir makes the directory's entries (creations, renames, removals)
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// lockDir takes an exclusive flock on dir/LOCK, held until the returned
// file is closed (or the process dies).
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock job queue: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

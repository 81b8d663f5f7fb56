package jobqueue

import (
	"errors"
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
	size    int64  // bytes of f that hold written groups
	// dirty means f may hold bytes past size: a failed append that could
	// not yet be cut off.
	dirty bool
}

// append writes b to the current log and, unless noSync, waits until it
// is on disk. fdatasync suffices: it also writes the new file size.
//
// A write or sync that fails (a full disk) is undone: the log is cut back
// to its size before, and that is made durable, so that the group neither
// survives a crash nor sits in front of the next one. If even that fails,
// the log stays dirty and the next append retries the cut first.
func (fs *fileSet) append(b []byte, noSync bool) error {
	if fs.dirty {
		if err := fs.cut(noSync); err != nil {
			return err
		}
	}
	_, err := fs.f.Write(b)
	if err == nil && !noSync {
		if err = fdatasync(fs.f); err != nil {
			err = fmt.Errorf("sync %s: %w", fs.f.Name(), err)
		}
	} else if err != nil {
		err = fmt.Errorf("write %s: %w", fs.f.Name(), err)
	}
	if err != nil {
		fs.dirty = true
		if cerr := fs.cut(noSync); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	fs.size += int64(len(b))
	return nil
}

// cut truncates the log to fs.size, durably, and clears fs.dirty.
func (fs *fileSet) cut(noSync bool) error {
	if err := fs.f.Truncate(fs.size); err != nil {
		return fmt.Errorf("undo failed write to %s (a restart may find it): %w", fs.f.Name(), err)
	}
	if !noSync {
		if err := fdatasync(fs.f); err != nil {
			return fmt.Errorf("undo failed write to %s (a restart may find it): %w", fs.f.Name(), err)
		}
	}
	fs.dirty = false
	return nil
}

// rotate starts log gen+1, durably, and makes it the current log. Only
// the last log may end in a torn write, so a dirty one is cut first.
func (fs *fileSet) rotate(noSync bool) error {
	if fs.dirty {
		if err := fs.cut(noSync); err != nil {
			return err
		}
	}
	f, err := createLog(fs.dir, fs.gen+1, noSync)
	if err != nil {
		return err
	}
	old := fs.f
	fs.f, fs.gen, fs.size, fs.dirty = f, fs.gen+1, 0, false
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
			// Leave no file behind: the next rotation creates it again.
			f.Close()
			os.Remove(path)
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

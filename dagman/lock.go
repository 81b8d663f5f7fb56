package dagman

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// dagLock is FILE.dag.lock, held with flock(2) while the DAG runs. The
// kernel drops the lock when its process dies, however it dies, so a lock
// file that exists but is not held was left by a crash.
type dagLock struct {
	f    *os.File
	path string
}

// lock takes the DAG's lock and reports whether a previous run died
// holding it (the file exists and names a process).
func lock(path string) (*dagLock, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open the DAG's lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, fmt.Errorf("%w: %s is held", ErrRunning, path)
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	crashed := st.Size() > 0
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return &dagLock{f: f, path: path}, crashed, nil
}

// release drops the lock; done removes the file, so that the next run
// starts afresh rather than recovering.
func (l *dagLock) release(done bool) {
	if done {
		os.Remove(l.path)
	}
	l.f.Close()
}

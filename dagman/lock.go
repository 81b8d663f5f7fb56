package dagman

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// dagLock is FILE.dag.lock, held with a POSIX record lock (fcntl(2)) while
// the DAG runs. The kernel drops the lock when its process dies, however it
// dies, so a lock file that exists but is not held was left by a crash.
// Unlike flock(2)'s, the lock is the process's own: a child forked to run
// a script or a job, which holds copies of the process's descriptors until
// it execs, does not hold the lock, nor keep it after the process's death.
// Another process is kept out; two runs of one DAG in one process are not.
type dagLock struct {
	f    *os.File
	path string
}

// lock takes the DAG's lock and reports whether a previous run died
// holding it: the file names a process. It does not yet name this one:
// mark does, once the run has set up what a recovery would read.
func lock(path string) (*dagLock, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open the DAG's lock file: %w", err)
	}
	whole := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &whole); err != nil {
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, false, fmt.Errorf("%w: %s is held", ErrRunning, path)
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return &dagLock{f: f, path: path}, st.Size() > 0, nil
}

// mark writes this process's id into the lock file: from now on a crash
// leaves it for the next run to recover from. The file is never empty
// while it is rewritten, so a crash during mark loses no recovery.
func (l *dagLock) mark() error {
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if _, err := l.f.WriteAt(pid, 0); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := l.f.Truncate(int64(len(pid))); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	return nil
}

// release drops the lock; done removes the file, so that the next run
// starts afresh rather than recovering.
func (l *dagLock) release(done bool) {
	if done {
		os.Remove(l.path)
	}
	l.f.Close()
}

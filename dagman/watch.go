package dagman

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// logWatch wakes the engine when the nodes log is written, so that a
// node's end is seen as it is logged rather than at the next look at the
// log (DAGMAN_USER_LOG_SCAN_INTERVAL, which stays the fallback). The
// writers are the scheduler's: the kernel's inotify tells of them.
type logWatch struct {
	f    *os.File // the inotify instance; closing it ends the reader
	wake chan struct{}
	done chan struct{}
}

// watchLog watches path, which must exist, until close.
func watchLog(path string) (*logWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch the nodes log: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch the nodes log %s: %w", path, err)
	}
	// Non-blocking, the file is read through Go's poller, and Close
	// ends a Read in progress.
	w := &logWatch{f: os.NewFile(uintptr(fd), "inotify"), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.read()
	return w, nil
}

// read turns the kernel's events into wakes, many into one while the
// engine is busy.
func (w *logWatch) read() {
	defer close(w.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		if _, err := w.f.Read(buf); err != nil {
			// Closed, or broken: the poll interval still reads the log.
			return
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *logWatch) close() {
	w.f.Close()
	<-w.done
}

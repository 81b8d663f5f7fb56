package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/fusectl"
)

// watchdog runs one CRIU call with a deadline. CRIU has no timeout of
// its own for file system calls: a FUSE server that stops answering
// stalls it for ever, with the job frozen.
type watchdog struct {
	workDir   string // CRIU's working directory of this call
	log       string // the log file CRIU keeps open in workDir
	timeout   time.Duration
	grace     time.Duration
	abortFUSE []string
	logger    *slog.Logger
	fired     bool // set when run had to stop CRIU
}

// run calls fn, which starts CRIU as a child of this process and waits
// for it; fn must not start CRIU once its context is done. If fn has not
// returned by the deadline (or ctx ends), run kills the CRIU process, then,
// if it is still there after the grace period, aborts the FUSE
// connections it may be stuck in. It returns fn's error, or one wrapping
// ErrTimeout or ctx's error if it had to step in.
func (w *watchdog) run(ctx context.Context, fn func(context.Context) error) error {
	fnCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(fnCtx) }()
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	var why error
	select {
	case err := <-done:
		return err
	case <-timer.C:
		why = fmt.Errorf("%w (%v)", ErrTimeout, w.timeout)
	case <-ctx.Done():
		why = ctx.Err()
	}
	w.fired = true
	cancel()
	w.logger.Warn("stopping criu", "reason", why)
	killed, ok, err := w.kill(done)
	if ok {
		return errors.Join(why, err)
	}
	// A killed CRIU still closes its files, and closing a file on FUSE
	// waits for the server's answer to FLUSH, uninterruptibly (as does a
	// request the server has read but not answered); only the server or
	// aborting the connection ends that.
	if len(w.abortFUSE) == 0 {
		return fmt.Errorf("%w: %w (pids %v) and no FUSE connection may be aborted", why, ErrStuck, killed)
	}
	for _, m := range w.abortFUSE {
		if err := fusectl.Abort(m); err != nil {
			w.logger.Error("abort FUSE connection", "mount", m, "err", err)
			continue
		}
		w.logger.Warn("aborted FUSE connection", "mount", m)
	}
	if _, ok, err := w.kill(done); ok {
		return errors.Join(why, err)
	}
	return fmt.Errorf("%w: %w (pids %v) even after aborting FUSE", why, ErrStuck, killed)
}

// kill kills the call's CRIU processes for the grace period, again and
// again (one may just be starting), until fn returns. It reports the
// processes it found, whether fn returned, and fn's error.
func (w *watchdog) kill(done <-chan error) (killed []int, returned bool, err error) {
	end := time.NewTimer(w.grace)
	defer end.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, pid := range w.criuPids() {
			if !slices.Contains(killed, pid) {
				w.logger.Warn("killing criu", "pid", pid)
				killed = append(killed, pid)
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		select {
		case err := <-done:
			return killed, true, err
		case <-end.C:
			return killed, false, nil
		case <-tick.C:
		}
	}
}

// criuPids finds the CRIU processes of this call: children of this
// process whose command is criu and that hold the call's log file open
// (libcontainer gives no handle on the process it starts).
func (w *watchdog) criuPids() []int {
	logPath := filepath.Join(w.workDir, w.log)
	if p, err := filepath.EvalSymlinks(logPath); err == nil {
		logPath = p
	}
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, ok := procStat(pid)
		if !ok || ppid != self || comm != "criu" {
			continue
		}
		if holds(pid, logPath) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat reads the command name and parent of pid.
func procStat(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return string(b[open+1 : end]), ppid, err == nil
}

// holds reports whether pid has path open.
func holds(pid int, path string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}

// fuseMagic is FUSE's magic number of statfs(2).
const fuseMagic = 0x65735546

// isFUSE reports whether path is on a FUSE file system.
func isFUSE(path string) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false, fmt.Errorf("statfs %s: %w", path, err)
	}
	return fs.Type == fuseMagic, nil
}

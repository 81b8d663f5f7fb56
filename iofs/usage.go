package iofs

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// usage gathers what the job does that the shadow cannot see, and tells
// it in the background. A small file comes whole with its lookup; when
// the job opens and reads it, no request reaches the shadow, whose
// statistics would otherwise miss the open, or (had it counted the
// lookup) count files the job never opened: the kernel looks names up for
// stat, ls and path walks too.
type usage struct {
	c      Client
	logger *slog.Logger

	mu    sync.Mutex // guards files
	files map[string]*FileUse

	kick chan struct{} // something to send
	stop chan struct{} // closed by close
	once sync.Once
	done sync.WaitGroup // the sender
}

// usageInterval spaces the reports, so that a job opening many small
// files costs one report for many opens.
const usageInterval = 200 * time.Millisecond

func newUsage(c Client, logger *slog.Logger) *usage {
	u := &usage{c: c, logger: logger, files: map[string]*FileUse{}, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	u.done.Add(1)
	go u.send()
	return u
}

// opened records an open of path served by iofs, with n bytes read.
func (u *usage) opened(path string, n int) {
	u.mu.Lock()
	f := u.files[path]
	if f == nil {
		f = &FileUse{Path: path}
		u.files[path] = f
	}
	f.Opens++
	if n > 0 {
		f.Reads++
		f.BytesRead += uint64(n)
	}
	u.mu.Unlock()
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func (u *usage) send() {
	defer u.done.Done()
	for {
		select {
		case <-u.kick:
		case <-u.stop:
			return
		}
		u.flush()
		select {
		case <-time.After(usageInterval):
		case <-u.stop:
			return
		}
	}
}

// flush sends what is gathered.
func (u *usage) flush() {
	u.mu.Lock()
	if len(u.files) == 0 {
		u.mu.Unlock()
		return
	}
	uses := make([]FileUse, 0, len(u.files))
	for _, f := range u.files {
		uses = append(uses, *f)
	}
	clear(u.files)
	u.mu.Unlock()
	if err := u.c.Account(context.Background(), uses); err != nil {
		u.logger.Warn("iofs: report file use to the shadow", "err", err)
	}
}

// close stops the sender and sends the rest.
func (u *usage) close() {
	u.once.Do(func() {
		close(u.stop)
		u.done.Wait()
		u.flush()
	})
}

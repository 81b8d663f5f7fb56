package iofs

import (
	"context"
	"sync"
	"syscall"
)

// maxBehind bounds the bytes a file may have on their way to the shadow.
const maxBehind = 8 << 20

// behind sends the writes to a remote file in the background, so that the
// job's next write overlaps the round trip of the one before, as network
// file systems do. Up to maxFlying writes travel at once; a write that
// overlaps one still travelling waits for it, so overlapping writes land
// in the order the job made them. A failed write is reported by the next
// write, read, fsync or close of the file; every other operation first
// waits until the writes are through.
type behind struct {
	inner     handle
	maxFlying int
	bufs      *sync.Pool // of *[]byte: the copies of the job's writes

	mu     sync.Mutex
	done   sync.Cond // signalled as writes complete
	queue  []*pendingWrite
	flying []*pendingWrite
	queued int // bytes queued or flying
	err    error
}

type pendingWrite struct {
	data []byte
	off  int64
	buf  *[]byte // the pooled buffer data is in, if it is
}

func (w *pendingWrite) overlaps(o *pendingWrite) bool {
	return w.off < o.off+int64(len(o.data)) && o.off < w.off+int64(len(w.data))
}

// newBehind wraps inner. Appends (the file is open O_APPEND) travel one at
// a time: their order is their offset.
// The copies of the job's writes come from bufs and go back to it.
func newBehind(inner handle, appending bool, bufs *sync.Pool) *behind {
	b := &behind{inner: inner, maxFlying: 4, bufs: bufs}
	if appending {
		b.maxFlying = 1
	}
	b.done.L = &b.mu
	return b
}

func (b *behind) WriteAt(_ context.Context, data []byte, off int64) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.queued > 0 && b.queued+len(data) > maxBehind && b.err == nil {
		b.done.Wait()
	}
	if err := b.err; err != nil {
		b.err = nil
		return 0, err
	}
	// The caller's buffer is reused once WriteAt returns.
	w := &pendingWrite{off: off}
	w.data, w.buf = b.copyOf(data)
	b.queue = append(b.queue, w)
	b.queued += len(data)
	b.dispatch()
	return len(data), nil
}

// dispatch starts the writes at the head of the queue that may go now.
// b.mu is held.
func (b *behind) dispatch() {
	for len(b.queue) > 0 && len(b.flying) < b.maxFlying {
		w := b.queue[0]
		for _, f := range b.flying {
			if w.overlaps(f) {
				return
			}
		}
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.flying = append(b.flying, w)
		go b.send(w)
	}
}

// copyOf copies data into a buffer from the pool, if it fits one, and
// returns the copy and the pooled buffer.
func (b *behind) copyOf(data []byte) ([]byte, *[]byte) {
	if len(data) > writeBuffer {
		return append([]byte(nil), data...), nil
	}
	p, ok := b.bufs.Get().(*[]byte)
	if !ok {
		s := make([]byte, writeBuffer)
		p = &s
	}
	return append((*p)[:0], data...), p
}

// writeBuffer is the size of the pooled copies: FUSE's largest write.
const writeBuffer = 1 << 20

func (b *behind) send(w *pendingWrite) {
	// The write belongs to no request any more.
	_, err := b.inner.WriteAt(context.Background(), w.data, w.off)
	if w.buf != nil {
		b.bufs.Put(w.buf)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, f := range b.flying {
		if f == w {
			b.flying = append(b.flying[:i], b.flying[i+1:]...)
			break
		}
	}
	b.queued -= len(w.data)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.dispatch()
	b.done.Broadcast()
}

// drain waits until every write is through and returns (and clears) the
// first error among them.
func (b *behind) drain() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) > 0 || len(b.flying) > 0 {
		b.done.Wait()
	}
	err := b.err
	b.err = nil
	return err
}

func (b *behind) ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error) {
	if err := b.drain(); err != nil {
		return nil, err
	}
	return b.inner.ReadAt(ctx, dest, off)
}

func (b *behind) Truncate(ctx context.Context, size int64) error {
	if err := b.drain(); err != nil {
		return err
	}
	return b.inner.Truncate(ctx, size)
}

func (b *behind) allocate(ctx context.Context, mode uint32, off, length int64) error {
	if err := b.drain(); err != nil {
		return err
	}
	a, ok := b.inner.(allocator)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	return a.allocate(ctx, mode, off, length)
}

func (b *behind) Stat(ctx context.Context) (Attr, error) {
	if err := b.drain(); err != nil {
		return Attr{}, err
	}
	return b.inner.Stat(ctx)
}

func (b *behind) Flush(ctx context.Context) error {
	if err := b.drain(); err != nil {
		return err
	}
	return b.inner.Flush(ctx)
}

func (b *behind) Sync(ctx context.Context) error {
	if err := b.drain(); err != nil {
		return err
	}
	return b.inner.Sync(ctx)
}

func (b *behind) Close(ctx context.Context) error {
	err := b.drain()
	if cerr := b.inner.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// reopen passes through: a second descriptor sees the writes once drained.
func (b *behind) reopen(ctx context.Context, flags uint32) (handle, error) {
	if err := b.drain(); err != nil {
		return nil, err
	}
	r, ok := b.inner.(reopener)
	if !ok {
		return nil, syscall.ENOENT
	}
	return r.reopen(ctx, flags)
}

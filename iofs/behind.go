package iofs

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"
)

// maxBehind bounds the bytes a file may have on their way to the shadow.
const maxBehind = 8 << 20

// writeBuffer is the size of a batch's buffer: FUSE's largest write.
const writeBuffer = 1 << 20

// A batchWriter makes several writes, then a sync, in one call (for a
// remote file, one round trip).
type batchWriter interface {
	handle
	writeBatch(ctx context.Context, w Writes) (int, error)
}

// behind sends the writes to a remote file in the background, so that the
// job's next write overlaps the round trip of the one before, as network
// file systems do. Writes that arrive while others travel are gathered
// into batches (up to 1 MiB, one request each, made in order), so that
// many small writes cost few round trips; up to maxFlying batches travel
// at once, and a batch that overlaps one still travelling waits for it,
// so overlapping writes land in the order the job made them. An fsync
// sends the last batch and the sync together. A failed write is reported
// by the next write, read, fsync or close of the file; every other
// operation first waits until the writes are through.
//
// The modification time the kernel writes back after writes it cached
// travels the same way (see deferMtime): after the writes before it,
// before those after it, and with the fsync that usually follows.
type behind struct {
	inner     batchWriter
	maxFlying int
	bufs      *sync.Pool // of *[]byte, writeBuffer long: the batches' buffers

	mu     sync.Mutex
	done   sync.Cond // signalled as batches complete
	queue  []*batch  // gathering or waiting, in order
	flying []*batch
	queued int // bytes queued or flying
	err    error
	// attr is the file as last seen (at open, or by a stat or change
	// through this file); end is where its furthest write ended.
	attr Attr
	end  int64
	// sent counts the batches sent; travelling ends the fsyncs
	// travelling with them (see Sync) when one of them fails.
	sent       uint64
	travelling map[*context.CancelFunc]struct{}
	// linger is how long a batch waits before it travels when none
	// does (see dispatch); lingering is set while one does; waiters
	// counts those waiting for every write, which go at once.
	linger    time.Duration
	lingering *time.Timer
	waiters   int
}

// lingerTime is how long the first write after a pause waits for more
// before it travels: an fsync that follows at once, as the kernel sends
// one right after it writes a file's cached pages back, then takes it
// along in one round trip. The job does not wait for it meanwhile.
const lingerTime = 200 * time.Microsecond

// A syncCounter makes a file durable after a count of the writes made
// through it, which may still travel: it fails with errNotCounted if its
// count is not the file's.
type syncCounter interface {
	syncAfter(ctx context.Context, n uint64, dataOnly bool) error
}

// batch is writes gathered into one request: data holds them one after
// the other, extents their (offset, length) pairs.
type batch struct {
	buf     *[]byte // pooled, nil for a write larger than a buffer
	data    []byte
	extents []int64
	lo, hi  int64 // the range the writes cover, for overlap tests
	// mtime, if set, is set once the writes are made. It orders the
	// batch: it travels alone, after every batch before it.
	mtime *int64
	sync  Sync
}

func (w *batch) overlaps(o *batch) bool { return w.lo < o.hi && o.lo < w.hi }

// newBehind wraps inner, the file with attributes a. Appends (the file is
// open O_APPEND) travel one batch at a time: their order is their offset.
// The batches' buffers come from bufs and go back to it.
func newBehind(inner batchWriter, appending bool, bufs *sync.Pool, a Attr) *behind {
	b := &behind{inner: inner, maxFlying: 4, bufs: bufs, attr: a, end: int64(a.Size), linger: lingerTime}
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
	// The caller's buffer is reused once WriteAt returns: copy it into
	// the batch being gathered, or a new one.
	var w *batch
	if n := len(b.queue); n > 0 && b.queue[n-1].buf != nil && b.queue[n-1].mtime == nil && len(b.queue[n-1].data)+len(data) <= writeBuffer {
		w = b.queue[n-1]
	} else {
		w = b.newBatch(len(data))
		b.queue = append(b.queue, w)
	}
	if len(w.extents) == 0 {
		w.lo, w.hi = off, off+int64(len(data))
	} else {
		w.lo, w.hi = min(w.lo, off), max(w.hi, off+int64(len(data)))
	}
	w.data = append(w.data, data...)
	w.extents = append(w.extents, off, int64(len(data)))
	b.queued += len(data)
	b.end = max(b.end, off+int64(len(data)))
	b.dispatch()
	return len(data), nil
}

// newBatch returns an empty batch with room for n bytes.
func (b *behind) newBatch(n int) *batch {
	if n > writeBuffer {
		return &batch{data: make([]byte, 0, n)}
	}
	p, ok := b.bufs.Get().(*[]byte)
	if !ok {
		s := make([]byte, writeBuffer)
		p = &s
	}
	return &batch{buf: p, data: (*p)[:0]}
}

// dispatch starts the batches at the head of the queue that may go now.
// b.mu is held.
func (b *behind) dispatch() {
	for len(b.queue) > 0 && len(b.flying) < b.maxFlying {
		w := b.queue[0]
		if len(b.flying) == 0 && len(b.queue) == 1 && b.waiters == 0 && b.linger > 0 && len(w.data) < writeBuffer/2 {
			if b.lingering == nil {
				b.lingering = time.AfterFunc(b.linger, b.lingered)
			}
			return
		}
		b.stopLinger()
		for _, f := range b.flying {
			if w.overlaps(f) || w.mtime != nil || f.mtime != nil {
				return
			}
		}
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.flying = append(b.flying, w)
		b.sent++
		go b.send(w)
	}
}

func (b *behind) send(w *batch) {
	// The batch belongs to no request any more.
	ws := Writes{Data: w.data, Extents: w.extents, Mtime: w.mtime, Sync: w.sync}
	if len(w.extents) == 2 {
		ws = Writes{Offset: w.extents[0], Data: w.data, Mtime: w.mtime, Sync: w.sync}
	}
	_, err := b.inner.writeBatch(context.Background(), ws)
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
	if err != nil {
		for cancel := range b.travelling {
			(*cancel)()
		}
	}
	b.dispatch()
	b.done.Broadcast()
}

// stopLinger forgets the batch waiting for company: it goes now. b.mu is
// held.
func (b *behind) stopLinger() {
	if b.lingering != nil {
		b.lingering.Stop()
		b.lingering = nil
	}
}

// lingered sends the batch that waited for company.
func (b *behind) lingered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lingering = nil
	b.waiters++ // it has waited enough
	b.dispatch()
	b.waiters--
}

// settle waits until every write is through and returns the first error
// among them, which stays to be reported by the file's next operation.
func (b *behind) settle() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.await()
	return b.err
}

// drain waits until every write is through and returns (and clears) the
// first error among them.
func (b *behind) drain() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.await()
	err := b.err
	b.err = nil
	return err
}

// await sends every write at once and waits until they are through.
// b.mu is held.
func (b *behind) await() {
	b.waiters++
	defer func() { b.waiters-- }()
	b.dispatch()
	for len(b.queue) > 0 || len(b.flying) > 0 {
		b.done.Wait()
	}
}

func (b *behind) ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error) {
	if err := b.drain(); err != nil {
		return nil, err
	}
	return b.inner.ReadAt(ctx, dest, off)
}

func (b *behind) refresh(ctx context.Context) error {
	if r, ok := b.inner.(refresher); ok {
		return r.refresh(ctx)
	}
	return nil
}

func (b *behind) Truncate(ctx context.Context, size int64) error {
	if err := b.drain(); err != nil {
		return err
	}
	err := b.inner.Truncate(ctx, size)
	if err == nil {
		b.mu.Lock()
		b.attr.Size, b.end = uint64(size), size
		b.mu.Unlock()
	}
	return err
}

func (b *behind) Stat(ctx context.Context) (Attr, error) {
	if err := b.drain(); err != nil {
		return Attr{}, err
	}
	a, err := b.inner.Stat(ctx)
	if err == nil {
		b.seen(a)
	}
	return a, err
}

// seen records the file's attributes as the shadow gave them.
func (b *behind) seen(a Attr) {
	b.mu.Lock()
	b.attr, b.end = a, int64(a.Size)
	b.mu.Unlock()
}

// deferMtime sets the file's modification time after the writes made so
// far, without waiting for them: the kernel sets it so after writing back
// a file whose writes it caches, before every fsync. It returns the
// attributes the file will have; false if an earlier write failed, for
// the caller to report.
func (b *behind) deferMtime(ns int64) (Attr, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return Attr{}, false
	}
	var w *batch
	if n := len(b.queue); n > 0 {
		w = b.queue[n-1] // its writes go first all the same
	} else {
		w = &batch{}
		b.queue = append(b.queue, w)
	}
	w.mtime = &ns
	b.dispatch()
	a := b.attr
	a.Mtime, a.Size = ns, uint64(max(int64(a.Size), b.end))
	return a, true
}

func (b *behind) Flush(ctx context.Context) error {
	if err := b.drain(); err != nil {
		return err
	}
	return b.inner.Flush(ctx)
}

// Sync makes every write durable. The fsync travels with the writes
// still on their way, the shadow making it after them; or, once nothing
// travels, the last batch carries it: either way a job's writes and its
// fsync cost about one round trip.
func (b *behind) Sync(ctx context.Context) error { return b.sync(ctx, SyncAll) }

// syncData is Sync for fdatasync(2).
func (b *behind) syncData(ctx context.Context) error { return b.sync(ctx, SyncData) }

func (b *behind) sync(ctx context.Context, how Sync) error {
	b.mu.Lock()
	if c, ok := b.inner.(syncCounter); ok && len(b.queue) == 0 && len(b.flying) > 0 && b.err == nil {
		n := b.sent
		// Not ended by the kernel's interrupts (see call), only by a
		// write that failed.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		if b.travelling == nil {
			b.travelling = map[*context.CancelFunc]struct{}{}
		}
		b.travelling[&cancel] = struct{}{}
		b.mu.Unlock()
		err := c.syncAfter(sctx, n, how == SyncData)
		b.mu.Lock()
		delete(b.travelling, &cancel)
		b.mu.Unlock()
		cancel()
		if werr := b.drain(); werr != nil {
			return werr // the fsync was for nothing
		}
		if !errors.Is(err, errNotCounted) {
			return err
		}
		return b.inner.Sync(ctx)
	}
	for {
		for len(b.flying) > 0 {
			b.done.Wait()
		}
		if len(b.queue) <= 1 {
			break
		}
		// All but the last batch go as usual.
		w := b.queue[0]
		b.queue = b.queue[1:]
		b.flying = append(b.flying, w)
		b.sent++
		go b.send(w)
	}
	if err := b.err; err != nil {
		b.err = nil
		b.mu.Unlock()
		return err
	}
	if len(b.queue) == 0 {
		b.mu.Unlock()
		if c, ok := b.inner.(syncCounter); ok && how == SyncData {
			if err := c.syncAfter(ctx, 0, true); !errors.Is(err, errNotCounted) {
				return err
			}
		}
		return b.inner.Sync(ctx)
	}
	b.stopLinger()
	last := b.queue[0]
	last.sync = how
	b.queue = nil
	b.flying = append(b.flying, last)
	b.sent++
	b.mu.Unlock()
	// Sent as the job's own request: the job waits for it.
	b.send(last)
	return b.drain()
}

func (b *behind) Close(ctx context.Context) error {
	err := b.drain()
	if cerr := b.inner.Close(ctx); err == nil {
		err = cerr
	}
	return err
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

func (b *behind) setattr(ctx context.Context, set SetAttr) (Attr, error) {
	if err := b.drain(); err != nil {
		return Attr{}, err
	}
	s, ok := b.inner.(attrSetter)
	if !ok {
		return Attr{}, syscall.EOPNOTSUPP
	}
	a, err := s.setattr(ctx, set)
	if err == nil {
		b.seen(a)
	}
	return a, err
}

func (b *behind) closedAttr() (Attr, bool) {
	if c, ok := b.inner.(closeReporter); ok {
		return c.closedAttr()
	}
	return Attr{}, false
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

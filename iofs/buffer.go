package iofs

import (
	"container/list"
	"context"
	"sync"
)

// buffered serves the buffer method: a cache of fixed-size blocks of the
// inner file with read-ahead of the next block, and write-behind of
// sequential writes, which are gathered and sent in large pieces while the
// job goes on. An error of a write sent behind the job's back is reported
// by its next write, fsync or close.
type buffered struct {
	inner     handle
	block     int64
	maxBlocks int
	pendMax   int

	mu     sync.Mutex // guards everything below
	blocks map[int64]*cblock
	lru    list.List // of *cblock, most recent first
	size   int64     // the file size as far as known

	pend    []byte // gathered writes, at pendOff
	pendOff int64
	werr    error         // of a write sent behind
	wbusy   chan struct{} // holds a token while a write is in flight
}

type cblock struct {
	idx   int64
	data  []byte
	err   error
	ready chan struct{} // closed when data or err is set
	elem  *list.Element
}

func newBuffered(inner handle, size, block, fileSize int64) *buffered {
	if block <= 0 {
		block = 32 << 10
	}
	n := int(max(size/block, 2))
	return &buffered{
		inner: inner, block: block, maxBlocks: n,
		pendMax: int(min(max(block, 1<<20), max(size, block))),
		blocks:  map[int64]*cblock{}, size: fileSize, wbusy: make(chan struct{}, 1),
	}
}

// get returns block idx, loading it if needed.
func (b *buffered) get(idx int64) (*cblock, error) {
	b.mu.Lock()
	c := b.blocks[idx]
	if c != nil {
		b.lru.MoveToFront(c.elem)
		b.mu.Unlock()
	} else {
		c = b.load(idx)
		b.mu.Unlock()
	}
	<-c.ready
	if c.err != nil {
		b.mu.Lock()
		b.forget(c)
		b.mu.Unlock()
		return nil, c.err
	}
	return c, nil
}

// load starts reading block idx. b.mu is held.
func (b *buffered) load(idx int64) *cblock {
	c := &cblock{idx: idx, ready: make(chan struct{})}
	c.elem = b.lru.PushFront(c)
	b.blocks[idx] = c
	for b.lru.Len() > b.maxBlocks {
		old := b.lru.Back().Value.(*cblock)
		b.forget(old)
	}
	go func() {
		// Loads outlive the request that caused them: read-ahead serves
		// the next one.
		data, err := b.inner.ReadAt(context.Background(), make([]byte, b.block), idx*b.block)
		c.data, c.err = data, err
		close(c.ready)
	}()
	return c
}

// forget drops c from the cache if it is still there. b.mu is held.
func (b *buffered) forget(c *cblock) {
	if b.blocks[c.idx] == c {
		delete(b.blocks, c.idx)
		b.lru.Remove(c.elem)
	}
}

func (b *buffered) ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error) {
	// Reads must see the job's own writes.
	if err := b.Flush(ctx); err != nil {
		return nil, err
	}
	n := 0
	for n < len(dest) {
		pos := off + int64(n)
		idx := pos / b.block
		c, err := b.get(idx)
		if err != nil {
			return nil, err
		}
		b.readAhead(idx + 1)
		in := pos - idx*b.block
		if in >= int64(len(c.data)) {
			break
		}
		n += copy(dest[n:], c.data[in:])
		if int64(len(c.data)) < b.block {
			break // end of file
		}
	}
	return dest[:n], nil
}

func (b *buffered) readAhead(idx int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocks[idx] == nil && idx*b.block < b.size {
		b.load(idx)
	}
}

func (b *buffered) WriteAt(ctx context.Context, data []byte, off int64) (int, error) {
	b.mu.Lock()
	if err := b.werr; err != nil {
		b.werr = nil
		b.mu.Unlock()
		return 0, err
	}
	// Cached blocks under the write are stale now.
	for idx := off / b.block; idx*b.block < off+int64(len(data)); idx++ {
		if c := b.blocks[idx]; c != nil {
			b.forget(c)
		}
	}
	b.size = max(b.size, off+int64(len(data)))
	if len(b.pend) > 0 && off == b.pendOff+int64(len(b.pend)) && len(b.pend)+len(data) <= b.pendMax {
		b.pend = append(b.pend, data...)
		full := len(b.pend) >= b.pendMax
		b.mu.Unlock()
		if full {
			b.sendBehind()
		}
		return len(data), nil
	}
	b.mu.Unlock()
	b.sendBehind()
	b.mu.Lock()
	b.pend = append(make([]byte, 0, b.pendMax), data...)
	b.pendOff = off
	b.mu.Unlock()
	return len(data), nil
}

// sendBehind sends the gathered writes in the background, after the write
// in flight, if any.
func (b *buffered) sendBehind() {
	b.wbusy <- struct{}{}
	b.mu.Lock()
	data, off := b.pend, b.pendOff
	b.pend = nil
	b.mu.Unlock()
	if len(data) == 0 {
		<-b.wbusy
		return
	}
	go func() {
		_, err := b.inner.WriteAt(context.Background(), data, off)
		if err != nil {
			b.mu.Lock()
			b.werr = err
			b.mu.Unlock()
		}
		<-b.wbusy
	}()
}

// Flush sends what is gathered, waits until every write is through and
// reports (and clears) the first error among them.
func (b *buffered) Flush(context.Context) error {
	b.await()
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.werr
	b.werr = nil
	return err
}

// settle waits until every write is through, leaving an error to be
// reported by the file's next operation.
func (b *buffered) settle() error {
	b.await()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.werr
}

// await sends what is gathered and waits until every write is through.
func (b *buffered) await() {
	b.sendBehind()
	b.wbusy <- struct{}{}
	<-b.wbusy
}

// refresh drops the cached blocks.
func (b *buffered) refresh(ctx context.Context) error {
	b.dropBlocks()
	if r, ok := b.inner.(refresher); ok {
		return r.refresh(ctx)
	}
	return nil
}

func (b *buffered) dropBlocks() {
	b.mu.Lock()
	for _, c := range b.blocks {
		b.forget(c)
	}
	b.mu.Unlock()
}

func (b *buffered) Truncate(ctx context.Context, size int64) error {
	if err := b.Flush(ctx); err != nil {
		return err
	}
	b.dropBlocks()
	b.mu.Lock()
	b.size = size
	b.mu.Unlock()
	return b.inner.Truncate(ctx, size)
}

func (b *buffered) Stat(ctx context.Context) (Attr, error) {
	a, err := b.inner.Stat(ctx)
	if err != nil {
		return Attr{}, err
	}
	b.mu.Lock()
	a.Size = max(a.Size, uint64(b.size))
	b.mu.Unlock()
	return a, nil
}

func (b *buffered) Sync(ctx context.Context) error {
	if err := b.Flush(ctx); err != nil {
		return err
	}
	return b.inner.Sync(ctx)
}

func (b *buffered) Close(ctx context.Context) error {
	err := b.Flush(ctx)
	if cerr := b.inner.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

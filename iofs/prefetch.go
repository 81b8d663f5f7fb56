package iofs

import (
	"context"
	"sync"
	"syscall"
)

// A job that reads a remote file at random pays a round trip for each
// read the page cache misses; the kernel reads ahead only of sequential
// readers. Once the job has read a file at random prefetchAfter times,
// iofs reads the whole file (if it is at most prefetchMax bytes) into the
// kernel's page cache in the background, and later reads find it there.
// It does so only while no descriptor of the file is open for writing,
// since a page it stores replaces the kernel's: an open for writing, and
// an open that finds the file changed (its pages are dropped), first stop
// the prefetch and wait for it.
const (
	prefetchAfter = 32
	prefetchMax   = 1 << 30
	prefetchChunk = 1 << 20
	// randomReadMax: larger reads are the kernel's read-ahead.
	randomReadMax = 64 << 10
)

// prefetches owns the prefetches of a mount.
type prefetches struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPrefetches() *prefetches {
	ctx, cancel := context.WithCancel(context.Background())
	return &prefetches{ctx: ctx, cancel: cancel}
}

// stop ends every prefetch and waits for them.
func (p *prefetches) stop() {
	p.cancel()
	p.wg.Wait()
}

// fetcher is one prefetch under way.
type fetcher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// noteRead records a read that missed the page cache, made through a
// descriptor open for reading only, and starts the prefetch when it is
// due. A random read is small and does not continue the last one: the
// kernel reads ahead of a sequential reader in large reads (several at
// once, in any order), and sends a random reader's reads as they are.
func (n *node) noteRead(off int64, size int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if size < randomReadMax && off != n.lastEnd {
		n.randomReads++
	}
	n.lastEnd = off + int64(size)
	if n.randomReads < prefetchAfter || n.writers > 0 || n.fetch != nil || !n.cachedOK ||
		n.cached.size > prefetchMax || len(n.phys.Methods) != 1 || n.phys.Base() != methodRemote {
		return
	}
	all := n.fsys.prefetches
	if all.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(all.ctx)
	f := &fetcher{cancel: cancel, done: make(chan struct{})}
	// Another prefetch is due only after as many misses again: pages
	// the kernel holds are read without iofs.
	n.fetch, n.randomReads = f, 0
	all.wg.Add(1)
	go n.prefetch(ctx, f, n.phys.Path, int64(n.cached.size))
}

func (n *node) prefetch(ctx context.Context, f *fetcher, path string, size int64) {
	defer n.fsys.prefetches.wg.Done()
	defer func() {
		n.mu.Lock()
		if n.fetch == f {
			n.fetch = nil
		}
		n.mu.Unlock()
		close(f.done)
	}()
	c := n.fsys.client
	o, err := c.Open(ctx, path, syscall.O_RDONLY, 0, 0)
	if err != nil {
		return
	}
	defer c.Close(context.WithoutCancel(ctx), o.Handle)
	buf := make([]byte, prefetchChunk)
	for off := int64(0); off < size; off += prefetchChunk {
		data, err := c.Read(ctx, o.Handle, off, buf)
		// A writer or a changed file waits for this goroutine: after its
		// cancel nothing is stored.
		if err != nil || len(data) == 0 || ctx.Err() != nil {
			return
		}
		if n.WriteCache(off, data) != 0 {
			return
		}
	}
}

// stopPrefetch stops the prefetch of the file, if one runs, and waits
// until it stores nothing more.
func (n *node) stopPrefetch() {
	n.mu.Lock()
	f := n.fetch
	n.mu.Unlock()
	if f != nil {
		f.cancel()
		<-f.done
	}
}

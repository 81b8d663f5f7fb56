package iofs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// memFile is a handle over memory that can be told to fail writes.
type memFile struct {
	mu     sync.Mutex
	data   []byte
	writes int
	failAt int // the failAt-th write fails with ENOSPC; 0: never
	reads  int
	syncs  int
	// batches counts writeBatch calls; each waits for gate, if set.
	batches int
	made    int // batches made; a failed one is as if lost on its way
	gate    chan struct{}
	// events lists the batches' writes, times and syncs, in the order
	// they were made: "w<offset>", "m<mtime>", "s".
	events []string
}

func (m *memFile) ReadAt(_ context.Context, dest []byte, off int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if off >= int64(len(m.data)) {
		return nil, nil
	}
	return dest[:copy(dest, m.data[off:])], nil
}

func (m *memFile) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if m.writes == m.failAt {
		return 0, syscall.ENOSPC
	}
	if end := off + int64(len(p)); end > int64(len(m.data)) {
		m.data = append(m.data, make([]byte, end-int64(len(m.data)))...)
	}
	copy(m.data[off:], p)
	return len(p), nil
}

func (m *memFile) writeBatch(ctx context.Context, w Writes) (_ int, err error) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	m.batches++
	m.mu.Unlock()
	defer func() {
		if err == nil {
			m.mu.Lock()
			m.made++
			m.mu.Unlock()
		}
	}()
	extents := w.Extents
	if len(extents) == 0 && len(w.Data) > 0 {
		extents = []int64{w.Offset, int64(len(w.Data))}
	}
	done := 0
	for i := 0; i < len(extents); i += 2 {
		n, err := m.WriteAt(ctx, w.Data[done:done+int(extents[i+1])], extents[i])
		done += n
		m.event(fmt.Sprintf("w%d", extents[i]))
		if err != nil {
			return done, err
		}
	}
	if w.Mtime != nil {
		m.event(fmt.Sprintf("m%d", *w.Mtime))
	}
	if w.Sync != SyncNone {
		m.mu.Lock()
		m.syncs++
		m.mu.Unlock()
		m.event("s")
	}
	return done, nil
}

func (m *memFile) event(e string) {
	m.mu.Lock()
	m.events = append(m.events, e)
	m.mu.Unlock()
}

func (m *memFile) Truncate(_ context.Context, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = m.data[:size]
	return nil
}

func (m *memFile) Stat(context.Context) (Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Attr{Size: uint64(len(m.data))}, nil
}
func (m *memFile) Flush(context.Context) error { return nil }
func (m *memFile) Sync(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncs++
	m.events = append(m.events, "s")
	return nil
}
func (m *memFile) Close(context.Context) error { return nil }

// countedFile is a memFile whose fsync may travel with its writes, as a
// remote file's does: it waits until n batches are made. Its events add
// "S<n>" when it is sent.
type countedFile struct{ *memFile }

func (c countedFile) syncAfter(ctx context.Context, n uint64, _ bool) error {
	c.event(fmt.Sprintf("S%d", n))
	for {
		c.mu.Lock()
		made := c.made
		c.mu.Unlock()
		if made >= int(n) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return c.Sync(ctx)
}

// eagerBehind is a behind whose writes travel at once, for the tests of
// what it does while they travel.
func eagerBehind(inner batchWriter, a Attr) *behind {
	b := newBehind(inner, false, &sync.Pool{}, a)
	b.linger = 0
	return b
}

// TestBehindLingers: a write after a pause waits a moment for company;
// the fsync that follows at once takes it along, in one batch; one that
// is alone goes after its moment, and a read sends it at once.
func TestBehindLingers(t *testing.T) {
	ctx := context.Background()
	m := &memFile{}
	b := newBehind(countedFile{m}, false, &sync.Pool{}, Attr{})
	b.linger = time.Hour // nothing sends it but what waits for it
	b.WriteAt(ctx, []byte("aaaa"), 0)
	if err := b.syncData(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.events, " "); got != "w0 s" || m.batches != 1 {
		t.Errorf("write and fsync made %q in %d batches, want %q in one", got, m.batches, "w0 s")
	}
	b.WriteAt(ctx, []byte("bb"), 1)
	if got, err := b.ReadAt(ctx, make([]byte, 4), 0); err != nil || string(got) != "abba" {
		t.Errorf("read after a write: %q, %v", got, err)
	}
	b.linger = time.Millisecond
	b.WriteAt(ctx, []byte("c"), 4)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		m.mu.Lock()
		n := len(m.data)
		m.mu.Unlock()
		if n == 5 {
			return
		}
	}
	t.Error("a write alone never went")
}

func TestBehindOrderAndErrors(t *testing.T) {
	ctx := context.Background()
	m := &memFile{failAt: 3}
	b := eagerBehind(m, Attr{})
	buf := []byte("aaaa")
	for i := range 3 {
		if _, err := b.WriteAt(ctx, buf, int64(4*i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		buf[0]++ // the caller reuses its buffer
	}
	if err := b.Flush(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("flush after a failed write: %v, want ENOSPC", err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Errorf("the error is reported once: %v", err)
	}
	// Overlapping writes land in order.
	b.WriteAt(ctx, []byte("xxxxxxxx"), 0)
	b.WriteAt(ctx, []byte("yy"), 2)
	got, err := b.ReadAt(ctx, make([]byte, 8), 0)
	if err != nil || string(got) != "xxyyxxxx" {
		t.Errorf("read after overlapping writes: %q, %v", got, err)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestBehindBatches makes many small writes while the first travels: they
// go in few batches, in order, and one sync follows them.
func TestBehindBatches(t *testing.T) {
	ctx := context.Background()
	m := &memFile{gate: make(chan struct{})}
	b := eagerBehind(m, Attr{})
	want := make([]byte, 64<<10)
	for i := range 2000 {
		off := (i * 7919) % (len(want) - 100)
		p := bytes.Repeat([]byte{byte(i)}, 100)
		copy(want[off:], p)
		if _, err := b.WriteAt(ctx, p, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	close(m.gate) // the first batch arrives; the rest were gathered meanwhile
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !bytes.Equal(m.data, want[:len(m.data)]) || len(m.data) < len(want)-100 {
		t.Errorf("the file differs from the writes made in order")
	}
	if m.batches > 10 || m.writes != 2000 {
		t.Errorf("2000 writes went in %d batches (%d pieces), want few", m.batches, m.writes)
	}
	if m.syncs != 1 {
		t.Errorf("%d syncs, want one", m.syncs)
	}
}

// TestBehindMtime: the modification time the kernel writes back travels
// after the writes made before it, before those made after, without the
// caller waiting for either; the fsync after it takes the last batch.
func TestBehindMtime(t *testing.T) {
	ctx := context.Background()
	m := &memFile{gate: make(chan struct{})}
	b := eagerBehind(m, Attr{Mode: 0o100644, Size: 2})
	if _, err := b.WriteAt(ctx, []byte("aaaa"), 0); err != nil {
		t.Fatal(err)
	}
	a, ok := b.deferMtime(42) // while the write waits at the gate
	if !ok || a.Mtime != 42 || a.Size != 4 || a.Mode != 0o100644 {
		t.Errorf("deferMtime: %+v %v, want the file as it will be", a, ok)
	}
	if _, err := b.WriteAt(ctx, []byte("bb"), 100); err != nil {
		t.Fatal(err)
	}
	close(m.gate)
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	got := strings.Join(m.events, " ")
	m.mu.Unlock()
	if want := "w0 m42 w100 s"; got != want {
		t.Errorf("made %q, want %q", got, want)
	}
	// With nothing travelling, the time and the fsync go together.
	m.events = nil
	b.WriteAt(ctx, []byte("c"), 7)
	b.drain()
	if _, ok := b.deferMtime(43); !ok {
		t.Fatal("deferMtime refused")
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(m.events, " "), "w7 m43 s"; got != want {
		t.Errorf("made %q, want %q", got, want)
	}
	if m.batches != 5 {
		t.Errorf("%d batches, want 5", m.batches)
	}
}

// TestBehindSyncTravels: an fsync made while a write travels goes at
// once, not after it; if the write is lost on its way, the fsync says so
// and does not wait for it for ever.
func TestBehindSyncTravels(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		m := &memFile{gate: make(chan struct{})}
		if fail {
			m.failAt = 1
		}
		b := eagerBehind(countedFile{m}, Attr{})
		if _, err := b.WriteAt(ctx, []byte("aaaa"), 0); err != nil {
			t.Fatal(err)
		}
		synced := make(chan error)
		go func() { synced <- b.Sync(ctx) }()
		for sent := false; !sent; {
			m.mu.Lock()
			sent = len(m.events) > 0
			m.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		close(m.gate) // the write arrives
		err := <-synced
		m.mu.Lock()
		got := strings.Join(m.events, " ")
		m.mu.Unlock()
		switch {
		case !fail && (err != nil || got != "S1 w0 s"):
			t.Errorf("fsync: %v, made %q, want %q", err, got, "S1 w0 s")
		case fail && !errors.Is(err, syscall.ENOSPC):
			t.Errorf("fsync after a failed write: %v (made %q), want ENOSPC", err, got)
		}
	}
}

func TestBufferedBlocksAndWriteBehind(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 10000) // 100,000 bytes
	m := &memFile{data: append([]byte(nil), data...)}
	b := newBuffered(m, 64<<10, 4096, int64(len(data)))
	got, err := b.ReadAt(ctx, make([]byte, 10000), 5000)
	if err != nil || !bytes.Equal(got, data[5000:15000]) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	if _, err := b.ReadAt(ctx, make([]byte, 100), 6000); err != nil {
		t.Fatal(err)
	}
	// Blocks 1 to 3 were read, block 4 ahead; block 1 came from the cache.
	m.mu.Lock()
	reads := m.reads
	m.mu.Unlock()
	if reads > 4 {
		t.Errorf("%d reads of the file for 4 distinct blocks", reads)
	}
	// Small sequential writes reach the file as one, and reads see them.
	for i := range 100 {
		if _, err := b.WriteAt(ctx, []byte("w"), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err = b.ReadAt(ctx, make([]byte, 101), 0)
	if err != nil || string(got) != string(bytes.Repeat([]byte("w"), 100))+"0" {
		t.Errorf("read after writes: %q, %v", got, err)
	}
	m.mu.Lock()
	writes := m.writes
	m.mu.Unlock()
	if writes != 1 {
		t.Errorf("100 writes of a byte made %d writes to the file, want 1", writes)
	}
	// Reading past the end stops at the end.
	got, err = b.ReadAt(ctx, make([]byte, 10), int64(len(data))-4)
	if err != nil || string(got) != "6789" {
		t.Errorf("read at the end: %q, %v", got, err)
	}
}

package iofs

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
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
	gate    chan struct{}
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

func (m *memFile) writeBatch(ctx context.Context, w Writes) (int, error) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	m.batches++
	m.mu.Unlock()
	if len(w.Extents) == 0 {
		return m.WriteAt(ctx, w.Data, w.Offset)
	}
	done := 0
	for i := 0; i < len(w.Extents); i += 2 {
		n, err := m.WriteAt(ctx, w.Data[done:done+int(w.Extents[i+1])], w.Extents[i])
		done += n
		if err != nil {
			return done, err
		}
	}
	if w.Sync != SyncNone {
		m.mu.Lock()
		m.syncs++
		m.mu.Unlock()
	}
	return done, nil
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
	return nil
}
func (m *memFile) Close(context.Context) error { return nil }

func TestBehindOrderAndErrors(t *testing.T) {
	ctx := context.Background()
	m := &memFile{failAt: 3}
	b := newBehind(m, false, &sync.Pool{})
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
	b := newBehind(m, false, &sync.Pool{})
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

package iofs_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPrefetchOnRandomReads reads a file at random: iofs then reads it
// whole into the page cache, and later reads need no round trip. A
// descriptor opened for writing meanwhile stops the prefetch, and what it
// writes is what the job reads.
func TestPrefetchOnRandomReads(t *testing.T) {
	e := newEnv(t, "")
	const size = 64 << 20
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{5}).Read(data)
	e.writeSubmit("f", string(data))
	bytesRead := func() int64 {
		for _, s := range e.io.Stats() {
			if filepath.Base(s.Path) == "f" {
				return s.BytesRead
			}
		}
		return 0
	}
	r, err := os.Open(e.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	buf := make([]byte, 4096)
	readAt := func(off int64) {
		t.Helper()
		if _, err := r.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[off:off+4096]) {
			t.Fatalf("4 KiB at %d differ from the file", off)
		}
	}
	for range 40 {
		readAt(rng.Int64N(size/4096) * 4096)
	}
	// Prefetch runs; a writer stops it and its writes count.
	w, err := os.OpenFile(e.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	patch := bytes.Repeat([]byte("W"), 4096)
	if _, err := w.WriteAt(patch, size-8192); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	copy(data[size-8192:], patch)
	readAt(size - 8192)
	if got := e.readSubmit("f"); got[size-8192:size-4096] != string(patch) {
		t.Error("the write did not reach the submit side")
	}

	// Without writers the prefetch runs to the end, and then reads are
	// served by the kernel.
	for range 40 {
		readAt(rng.Int64N(size/4096) * 4096)
	}
	deadline := time.Now().Add(60 * time.Second)
	for bytesRead() < size && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := bytesRead(); n < size {
		t.Fatalf("the shadow sent %d bytes of %d: no prefetch", n, size)
	}
	time.Sleep(100 * time.Millisecond) // the last chunk reaches the kernel
	before := bytesRead()
	for range 1000 {
		readAt(rng.Int64N(size/4096) * 4096)
	}
	if n := bytesRead() - before; n != 0 {
		t.Errorf("after the prefetch, 1000 random reads took %d bytes from the shadow", n)
	}
}

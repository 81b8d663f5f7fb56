package wire

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Sizes of the buffers a bufferPool keeps: powers of two from 256 bytes to
// 1 MiB; larger buffers are allocated and left to the garbage collector.
const (
	minPoolShift = 8
	maxPoolShift = 20
)

// bufferPool is gRPC's buffer pool without its clearing of every buffer it
// hands out. gRPC fills each buffer it takes before anything reads it (the
// frames it reads off a connection, the messages it marshals), and the
// clearing cost a quarter of the processor time of a remote I/O client's
// connection, which reads a 16 KiB frame into a pooled buffer 64 times per
// MiB.
type bufferPool struct {
	tiers [maxPoolShift - minPoolShift + 1]sync.Pool
}

var _ mem.BufferPool = (*bufferPool)(nil)

func newBufferPool() *bufferPool { return &bufferPool{} }

// tier returns the index of the smallest tier holding size bytes.
func tier(size int) int {
	if size <= 1<<minPoolShift {
		return 0
	}
	return bits.Len(uint(size-1)) - minPoolShift
}

// Get returns a buffer of length size, with unspecified contents.
func (p *bufferPool) Get(size int) *[]byte {
	t := tier(size)
	if t >= len(p.tiers) {
		b := make([]byte, size)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:size]
		return b
	}
	b := make([]byte, size, 1<<(t+minPoolShift))
	return &b
}

// Put keeps a buffer Get returned for another Get.
func (p *bufferPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minPoolShift || c&(c-1) != 0 {
		return
	}
	if t := tier(c); t < len(p.tiers) {
		p.tiers[t].Put(b)
	}
}

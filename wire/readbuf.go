package wire

import (
	"sync"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// ReadBuffers lends a server the buffers it reads file data into for
// ReadReply.Data and takes each back once gRPC has sent the reply that
// carries it, so that serving reads allocates nothing per read. A server
// using them is built with the option its ServerOption returns.
type ReadBuffers struct {
	pool sync.Pool // of *[]byte

	mu   sync.Mutex
	lent map[*byte]*[]byte // by the buffer's first byte
}

// NewReadBuffers returns an empty set of buffers.
func NewReadBuffers() *ReadBuffers {
	return &ReadBuffers{lent: map[*byte]*[]byte{}}
}

// readBufferSize is the size of every buffer: the largest read iofs asks for.
const readBufferSize = 1 << 20

// Get returns a buffer of n bytes (at most 1 MiB; larger ones are made
// and not lent). A reply whose Data is the buffer, or a prefix of it, gives
// it back when sent; a buffer no reply carries goes back with Put.
func (b *ReadBuffers) Get(n int) []byte {
	if n > readBufferSize {
		return make([]byte, n)
	}
	p, ok := b.pool.Get().(*[]byte)
	if !ok {
		s := make([]byte, readBufferSize)
		p = &s
	}
	b.mu.Lock()
	b.lent[unsafe.SliceData(*p)] = p
	b.mu.Unlock()
	return (*p)[:n]
}

// Put gives back a buffer from Get that no reply carries.
func (b *ReadBuffers) Put(buf []byte) {
	if p := b.take(buf); p != nil {
		b.pool.Put(p)
	}
}

// take ends the loan of the buffer buf starts, if it is one.
func (b *ReadBuffers) take(buf []byte) *[]byte {
	if cap(buf) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first := unsafe.SliceData(buf)
	p := b.lent[first]
	delete(b.lent, first)
	return p
}

// ServerOption returns the server option that lets the server's codec hand
// replies' buffers back to b.
func (b *ReadBuffers) ServerOption() grpc.ServerOption {
	c := newCodec()
	c.readBuffers = b
	return grpc.ForceServerCodecV2(c)
}

// returned is the mem.BufferPool through which gRPC hands a sent reply's
// buffer back.
type returned struct{ b *ReadBuffers }

var _ mem.BufferPool = returned{}

func (r returned) Get(n int) *[]byte {
	s := make([]byte, n)
	return &s
}

func (r returned) Put(p *[]byte) {
	*p = (*p)[:cap(*p)]
	r.b.pool.Put(p)
}

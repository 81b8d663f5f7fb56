package wire

import (
	"sync"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// Buffers lends a server the buffers of its bulk file data, so that
// serving reads and writes allocates nothing per call: the buffers it
// reads file data into for ReadReply.Data (or a served
// CheckpointChunk.Data), taken back once gRPC has sent the reply that
// carries them, and those the codec decodes WriteRequest.Data into,
// which the server gives back with Put once it has written them. A
// server using them is built with the option its ServerOption returns.
type Buffers struct {
	pool sync.Pool // of *[]byte

	mu   sync.Mutex
	lent map[*byte]*[]byte // by the buffer's first byte
}

// NewBuffers returns an empty set of buffers.
func NewBuffers() *Buffers {
	return &Buffers{lent: map[*byte]*[]byte{}}
}

// bufferSize is the size of every buffer: the largest read or write iofs
// makes.
const bufferSize = 1 << 20

// Get returns a buffer of n bytes (at most 1 MiB; larger ones are made
// and not lent). A reply whose Data is the buffer, or a prefix of it, gives
// it back when sent; a buffer no reply carries goes back with Put.
func (b *Buffers) Get(n int) []byte {
	if n > bufferSize {
		return make([]byte, n)
	}
	p, ok := b.pool.Get().(*[]byte)
	if !ok {
		s := make([]byte, bufferSize)
		p = &s
	}
	b.mu.Lock()
	b.lent[unsafe.SliceData(*p)] = p
	b.mu.Unlock()
	return (*p)[:n]
}

// Put gives back a buffer from Get that no reply carries, or the data of
// a WriteRequest; any other slice is ignored.
func (b *Buffers) Put(buf []byte) {
	if p := b.take(buf); p != nil {
		b.pool.Put(p)
	}
}

// take ends the loan of the buffer buf starts, if it is one.
func (b *Buffers) take(buf []byte) *[]byte {
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

// ServerOption returns the server option that lets the server's codec
// lend and take back b's buffers.
func (b *Buffers) ServerOption() grpc.ServerOption {
	c := newCodec()
	c.buffers = b
	return grpc.ForceServerCodecV2(c)
}

// CallOption returns the call option that lets a client's codec send
// the data of the chunks of a call from b's buffers and take them back
// (a TransferOutput's, say; see transfer.Sender).
func (b *Buffers) CallOption() grpc.CallOption {
	c := newCodec()
	c.buffers = b
	return grpc.ForceCodecV2(c)
}

// returned is the mem.BufferPool through which gRPC hands a sent reply's
// buffer back.
type returned struct{ b *Buffers }

var _ mem.BufferPool = returned{}

func (r returned) Get(n int) *[]byte {
	s := make([]byte, n)
	return &s
}

func (r returned) Put(p *[]byte) {
	*p = (*p)[:cap(*p)]
	r.b.pool.Put(p)
}

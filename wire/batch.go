package wire

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc/credentials"
)

// batchedTLS is TLS transport credentials whose connections write each of
// gRPC's writes with one system call. crypto/tls writes every record (at
// most 16 KiB) with its own write to the socket: a 1 MiB remote read took
// 64 writes on one side and as many reads on the other.
type batchedTLS struct {
	credentials.TransportCredentials
}

func newBatchedTLS(c credentials.TransportCredentials) credentials.TransportCredentials {
	return batchedTLS{c}
}

func (c batchedTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	b := &batchConn{Conn: raw}
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, b)
	if err != nil {
		return nil, nil, err
	}
	return &flushConn{Conn: conn, batch: b}, info, nil
}

func (c batchedTLS) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	b := &batchConn{Conn: raw}
	conn, info, err := c.TransportCredentials.ServerHandshake(b)
	if err != nil {
		return nil, nil, err
	}
	return &flushConn{Conn: conn, batch: b}, info, nil
}

func (c batchedTLS) Clone() credentials.TransportCredentials {
	return batchedTLS{c.TransportCredentials.Clone()}
}

// flushConn is the TLS connection gRPC uses: each Write's records are
// gathered beneath it and written together.
type flushConn struct {
	net.Conn // the TLS connection
	batch    *batchConn
}

func (c *flushConn) Write(p []byte) (int, error) {
	c.batch.start()
	n, err := c.Conn.Write(p)
	if ferr := c.batch.flush(); err == nil {
		err = ferr
	}
	return n, err
}

// batchConn is the socket beneath TLS. Between start and flush it gathers
// what TLS writes; otherwise (the handshake, alerts) it writes through.
type batchConn struct {
	net.Conn

	mu       sync.Mutex // guards batching and buf; held while writing
	batching bool
	buf      []byte
}

func (c *batchConn) start() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batching {
		return c.Conn.Write(p)
	}
	if len(c.buf)+len(p) > batchBuffer {
		if err := c.writeOut(); err != nil {
			return 0, err
		}
		if len(p) > batchBuffer {
			return c.Conn.Write(p)
		}
	}
	// The buffer grows to what the connection's writes need, for control
	// traffic a few KiB, and is kept.
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// flush writes what was gathered and ends the batch.
func (c *batchConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batching = false
	return c.writeOut()
}

func (c *batchConn) writeOut() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// batchBuffer bounds a connection's gathering buffer: gRPC's write buffer
// and the TLS records' overhead.
const batchBuffer = writeBufferSize + writeBufferSize/64 + 4096

package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
)

// MaxMessage bounds one gRPC message. Ads and file chunks are far smaller;
// a whole-cluster submission of many thousand ads is the largest message.
const MaxMessage = 256 << 20

// writeBufferSize is how much gRPC gathers before it writes to a
// connection (its default is 32 KiB); with batchedTLS it is also the
// largest write to the socket. The buffer is shared (taken from a pool for
// each batch of writes), so that an idle connection holds none. gRPC reads
// without a buffer of its own (ReadBufferSize 0): TLS keeps each record it
// decrypts, and another buffer above it only added a copy.
const writeBufferSize = 256 << 10

// ServerOptions returns the options for a daemon's TLS gRPC server: the pool's
// mutual TLS, the access check of every call (see Access), the codec and buffer pool that spare remote I/O copies and
// clearing, message limits, and keepalives that notice a vanished peer.
func ServerOptions(cfg *tls.Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(newBatchedTLS(credentials.NewTLS(cfg))),
		grpc.WriteBufferSize(writeBufferSize),
		grpc.ReadBufferSize(0),
		grpc.ForceServerCodecV2(newCodec()),
		experimental.BufferPool(newBufferPool()),
		grpc.MaxRecvMsgSize(MaxMessage),
		grpc.MaxSendMsgSize(MaxMessage),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 10 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(unaryAccess),
		grpc.ChainStreamInterceptor(streamAccess),
	}
}

// Dial opens a client connection to addr ("host:port") with the pool's
// mutual TLS. The connection is made lazily; the first RPC reports errors.
func Dial(addr string, cfg *tls.Config) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(newBatchedTLS(credentials.NewTLS(cfg))),
		grpc.WithWriteBufferSize(writeBufferSize),
		grpc.WithReadBufferSize(0),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage), grpc.ForceCodecV2(newCodec())),
		experimental.WithBufferPool(newBufferPool()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		grpc.WithConnectParams(grpcConnectParams()),
	)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

// CallTimeout is the deadline for one short control RPC between daemons.
const CallTimeout = 10 * time.Second

// WithTimeout returns a context for one short control RPC.
func WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

func grpcConnectParams() grpc.ConnectParams {
	p := grpc.ConnectParams{MinConnectTimeout: 5 * time.Second}
	p.Backoff.BaseDelay = 100 * time.Millisecond
	p.Backoff.Multiplier = 1.6
	p.Backoff.Jitter = 0.2
	p.Backoff.MaxDelay = 2 * time.Second
	return p
}

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

// ServerOptions returns the options for a daemon's TLS gRPC server: the pool's
// mutual TLS, the codec and buffer pool that spare remote I/O copies and
// clearing, message limits, and keepalives that notice a vanished peer.
func ServerOptions(cfg *tls.Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(credentials.NewTLS(cfg)),
		grpc.ForceServerCodecV2(newCodec()),
		experimental.BufferPool(newBufferPool()),
		grpc.MaxRecvMsgSize(MaxMessage),
		grpc.MaxSendMsgSize(MaxMessage),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 10 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
}

// Dial opens a client connection to addr ("host:port") with the pool's
// mutual TLS. The connection is made lazily; the first RPC reports errors.
func Dial(addr string, cfg *tls.Config) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
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

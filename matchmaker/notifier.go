package matchmaker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"harrier.dev/harrier/wire"
)

// A Notifier tells the two sides of a match about it. Implementations must
// be safe for concurrent use and must return once ctx is done.
type Notifier interface {
	// StartdMatched tells the startd at addr that one of its slots was matched.
	StartdMatched(ctx context.Context, addr string, req *wire.StartdMatchedRequest) error
	// AgentMatched tells the agent at addr that one of its jobs was matched.
	AgentMatched(ctx context.Context, addr string, req *wire.MatchedRequest) error
}

// errNoAddr reports an ad that does not say where its daemon listens.
var errNoAddr = errors.New("no address to notify")

// grpcNotifier notifies over the pool's mutual TLS, keeping one client
// connection per address. A connection is dropped after a failed call, so
// that a peer that moved or restarted is dialled afresh.
type grpcNotifier struct {
	tls *tls.Config

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newGRPCNotifier(cfg *tls.Config) *grpcNotifier {
	return &grpcNotifier{tls: cfg, conns: make(map[string]*grpc.ClientConn)}
}

func (n *grpcNotifier) StartdMatched(ctx context.Context, addr string, req *wire.StartdMatchedRequest) error {
	return n.call(addr, func(cc *grpc.ClientConn) error {
		_, err := wire.NewStartdClient(cc).Matched(ctx, req)
		return err
	})
}

func (n *grpcNotifier) AgentMatched(ctx context.Context, addr string, req *wire.MatchedRequest) error {
	return n.call(addr, func(cc *grpc.ClientConn) error {
		_, err := wire.NewAgentClient(cc).Matched(ctx, req)
		return err
	})
}

func (n *grpcNotifier) call(addr string, rpc func(*grpc.ClientConn) error) error {
	if addr == "" {
		return errNoAddr
	}
	cc, err := n.conn(addr)
	if err != nil {
		return err
	}
	if err := rpc(cc); err != nil {
		n.drop(addr, cc)
		return fmt.Errorf("%s: %w", addr, err)
	}
	return nil
}

func (n *grpcNotifier) conn(addr string) (*grpc.ClientConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cc, ok := n.conns[addr]; ok {
		return cc, nil
	}
	cc, err := wire.Dial(addr, n.tls)
	if err != nil {
		return nil, err
	}
	n.conns[addr] = cc
	return cc, nil
}

// drop closes cc and forgets it, unless another call has replaced it already.
func (n *grpcNotifier) drop(addr string, cc *grpc.ClientConn) {
	n.mu.Lock()
	if n.conns[addr] == cc {
		delete(n.conns, addr)
	}
	n.mu.Unlock()
	cc.Close()
}

// Close closes every cached connection.
func (n *grpcNotifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for addr, cc := range n.conns {
		cc.Close()
		delete(n.conns, addr)
	}
}

package matchmaker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"harrier.dev/harrier/pki"
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
// Each side must prove its role: a match is told to a startd and to an
// agent, never to whichever daemon answers at the address an ad gave.
type grpcNotifier struct {
	startd, agent *tls.Config

	mu    sync.Mutex
	conns map[notifyAddr]*grpc.ClientConn
}

type notifyAddr struct {
	addr string
	role pki.Role
}

func newGRPCNotifier(cfg *tls.Config) *grpcNotifier {
	return &grpcNotifier{
		startd: pki.ExpectRole(cfg, pki.RoleStartd),
		agent:  pki.ExpectRole(cfg, pki.RoleAgent),
		conns:  make(map[notifyAddr]*grpc.ClientConn),
	}
}

func (n *grpcNotifier) StartdMatched(ctx context.Context, addr string, req *wire.StartdMatchedRequest) error {
	return n.call(notifyAddr{addr, pki.RoleStartd}, func(cc *grpc.ClientConn) error {
		_, err := wire.NewStartdClient(cc).Matched(ctx, req)
		return err
	})
}

func (n *grpcNotifier) AgentMatched(ctx context.Context, addr string, req *wire.MatchedRequest) error {
	return n.call(notifyAddr{addr, pki.RoleAgent}, func(cc *grpc.ClientConn) error {
		_, err := wire.NewAgentClient(cc).Matched(ctx, req)
		return err
	})
}

func (n *grpcNotifier) call(to notifyAddr, rpc func(*grpc.ClientConn) error) error {
	if to.addr == "" {
		return errNoAddr
	}
	cc, err := n.conn(to)
	if err != nil {
		return err
	}
	if err := rpc(cc); err != nil {
		n.drop(to, cc)
		return fmt.Errorf("%s: %w", to.addr, err)
	}
	return nil
}

func (n *grpcNotifier) conn(to notifyAddr) (*grpc.ClientConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cc, ok := n.conns[to]; ok {
		return cc, nil
	}
	cfg := n.startd
	if to.role == pki.RoleAgent {
		cfg = n.agent
	}
	cc, err := wire.Dial(to.addr, cfg)
	if err != nil {
		return nil, err
	}
	n.conns[to] = cc
	return cc, nil
}

// drop closes cc and forgets it, unless another call has replaced it already.
func (n *grpcNotifier) drop(addr notifyAddr, cc *grpc.ClientConn) {
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

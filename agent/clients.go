package agent

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/wire"
)

// clients caches one connection per peer address.
type clients struct {
	tls   *tls.Config
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newClients(cfg *tls.Config) *clients {
	return &clients{tls: cfg, conns: make(map[string]*grpc.ClientConn)}
}

func (c *clients) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	cc, err := wire.Dial(addr, c.tls)
	if err != nil {
		return nil, err
	}
	c.conns[addr] = cc
	return cc, nil
}

func (c *clients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, cc := range c.conns {
		cc.Close()
		delete(c.conns, addr)
	}
}

func (c *clients) requestClaim(ctx context.Context, addr string, req *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	return wire.NewStartdClient(cc).RequestClaim(cctx, req)
}

// keepAlive renews a claim and returns the lease the startd granted (0 if
// it named none).
func (c *clients) keepAlive(ctx context.Context, addr, claimID string) (time.Duration, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return 0, err
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	reply, err := wire.NewStartdClient(cc).KeepAlive(cctx, &wire.KeepAliveRequest{ClaimId: claimID})
	if err != nil {
		return 0, err
	}
	return time.Duration(reply.LeaseSeconds) * time.Second, nil
}

func (c *clients) releaseClaim(ctx context.Context, addr, claimID string) {
	cc, err := c.conn(addr)
	if err != nil {
		return
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	_, _ = wire.NewStartdClient(cc).ReleaseClaim(cctx, &wire.ReleaseClaimRequest{ClaimId: claimID})
}

func (c *clients) collector(addr string) (wire.CollectorClient, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	return wire.NewCollectorClient(cc), nil
}

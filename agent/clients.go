package agent

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// clients caches one connection per peer address and role. Each dial
// insists on the role it expects at the other end: the agent tells its
// claims only to startds and its jobs only to matchmakers.
type clients struct {
	startd, matchmaker *tls.Config
	mu                 sync.Mutex
	conns              map[peerAddr]*grpc.ClientConn
}

type peerAddr struct {
	addr string
	role pki.Role
}

func newClients(cfg *tls.Config) *clients {
	return &clients{
		startd:     pki.ExpectRole(cfg, pki.RoleStartd),
		matchmaker: pki.ExpectRole(cfg, pki.RoleMatchmaker),
		conns:      make(map[peerAddr]*grpc.ClientConn),
	}
}

func (c *clients) conn(addr string, role pki.Role) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := peerAddr{addr, role}
	if cc, ok := c.conns[k]; ok {
		return cc, nil
	}
	cfg := c.startd
	if role == pki.RoleMatchmaker {
		cfg = c.matchmaker
	}
	cc, err := wire.Dial(addr, cfg)
	if err != nil {
		return nil, err
	}
	c.conns[k] = cc
	return cc, nil
}

func (c *clients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cc := range c.conns {
		cc.Close()
		delete(c.conns, k)
	}
}

func (c *clients) requestClaim(ctx context.Context, addr string, req *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	cc, err := c.conn(addr, pki.RoleStartd)
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
	cc, err := c.conn(addr, pki.RoleStartd)
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
	cc, err := c.conn(addr, pki.RoleStartd)
	if err != nil {
		return
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	_, _ = wire.NewStartdClient(cc).ReleaseClaim(cctx, &wire.ReleaseClaimRequest{ClaimId: claimID})
}

func (c *clients) collector(addr string) (wire.CollectorClient, error) {
	cc, err := c.conn(addr, pki.RoleMatchmaker)
	if err != nil {
		return nil, err
	}
	return wire.NewCollectorClient(cc), nil
}

// activateClaim has the startd start a starter for a job under a claim
// this agent holds, telling it where the job's shadow listens, the
// fingerprint of the shadow's session certificate, and the job's secret.
func (c *clients) activateClaim(ctx context.Context, addr string, req *wire.ActivateClaimRequest) error {
	cc, err := c.conn(addr, pki.RoleStartd)
	if err != nil {
		return err
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	_, err = wire.NewStartdClient(cc).ActivateClaim(cctx, req)
	return err
}

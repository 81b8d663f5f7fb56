package startd

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// testPKI is a throw-away pool CA that issues certificates for 127.0.0.1.
type testPKI struct {
	t   *testing.T
	dir string
	ca  *pki.CA
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{t: t, dir: dir, ca: ca}
}

// configs returns the server and client configurations of identity.
func (p *testPKI) configs(identity string) (server, client *tls.Config) {
	p.t.Helper()
	paths := pki.HostPaths(p.dir, strings.ReplaceAll(identity, "@", "-"))
	if err := p.ca.Issue(identity, []string{"127.0.0.1"}, paths.Cert, paths.Key); err != nil {
		p.t.Fatal(err)
	}
	server, err := paths.ServerConfig()
	if err != nil {
		p.t.Fatal(err)
	}
	if client, err = paths.ClientConfig(); err != nil {
		p.t.Fatal(err)
	}
	return server, client
}

// poolClient calls a startd as the pool's daemons do: Matched as the
// matchmaker, every claim call as the agent.
type poolClient struct {
	wire.StartdClient // the agent's
	mm                wire.StartdClient
}

func (c poolClient) Matched(ctx context.Context, req *wire.StartdMatchedRequest, opts ...grpc.CallOption) (*wire.StartdMatchedReply, error) {
	return c.mm.Matched(ctx, req, opts...)
}

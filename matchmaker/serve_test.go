package matchmaker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// testCA is a throw-away pool CA.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test pool CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a certificate for name, valid for 127.0.0.1, usable by
// servers and clients alike.
func (ca *testCA) issue(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) serverTLS(t *testing.T, name string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, name)},
		ClientCAs:    ca.pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS13,
	}
}

func (ca *testCA) clientTLS(t *testing.T, name string) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.issue(t, name)}, RootCAs: ca.pool, MinVersion: tls.VersionTLS13}
}

// recorder is a fake agent and startd: it records the Matched calls.
type recorder struct {
	wire.UnimplementedAgentServer
	mu      sync.Mutex
	calls   []string // claim ids, in order
	matched chan string
}

func (r *recorder) record(claim string) {
	r.mu.Lock()
	r.calls = append(r.calls, claim)
	r.mu.Unlock()
	r.matched <- claim
}

func (r *recorder) Matched(ctx context.Context, req *wire.MatchedRequest) (*wire.MatchedReply, error) {
	r.record(req.ClaimId)
	return &wire.MatchedReply{}, nil
}

type startdRecorder struct {
	wire.UnimplementedStartdServer
	*recorder
}

func (r startdRecorder) Matched(ctx context.Context, req *wire.StartdMatchedRequest) (*wire.StartdMatchedReply, error) {
	r.record(req.ClaimId)
	return &wire.StartdMatchedReply{}, nil
}

// serveFake serves register's services over TLS on 127.0.0.1 and returns
// the address.
func serveFake(t *testing.T, cfg *tls.Config, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(wire.ServerOptions(cfg)...)
	register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// startMatchmaker serves a matchmaker on 127.0.0.1 and returns its address.
func startMatchmaker(t *testing.T, ca *testCA) string {
	t.Helper()
	m, err := New(Config{
		Logger: quietLogger(), TLS: ca.serverTLS(t, "matchmaker@test"), ClientTLS: ca.clientTLS(t, "matchmaker@test"),
		Interval: time.Hour, Debounce: time.Millisecond, Name: "negotiator@test",
	})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func TestServeTellsBothSides(t *testing.T) {
	ca := newTestCA(t)
	agent := &recorder{matched: make(chan string, 4)}
	startd := startdRecorder{recorder: &recorder{matched: make(chan string, 4)}}
	agentAddr := serveFake(t, ca.serverTLS(t, "agent@a"), func(s *grpc.Server) { wire.RegisterAgentServer(s, agent) })
	startdAddr := serveFake(t, ca.serverTLS(t, "startd@a"), func(s *grpc.Server) { wire.RegisterStartdServer(s, startd) })
	mmAddr := startMatchmaker(t, ca)

	dial := func(identity string) wire.CollectorClient {
		cc, err := wire.Dial(mmAddr, ca.clientTLS(t, identity))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return wire.NewCollectorClient(cc)
	}
	collector, agentSide := dial("startd@a"), dial("agent@a")
	ctx := context.Background()
	if _, err := collector.Advertise(ctx, &wire.AdvertiseRequest{
		Type: TypeMachine, Name: "slot1@a", LeaseSeconds: 60,
		Ad: machineText("slot1@a", StateUnclaimed, 2048, `StartdAddr = "`+startdAddr+`"`),
	}); err != nil {
		t.Fatalf("advertise machine: %v", err)
	}
	if _, err := agentSide.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{
		Agent: "agent@a", AgentAddr: agentAddr, LeaseSeconds: 60, Ads: []string{jobText(7, 0, "alice", "")},
	}); err != nil {
		t.Fatalf("advertise jobs: %v", err)
	}

	var fromStartd, fromAgent string
	for fromStartd == "" || fromAgent == "" {
		select {
		case fromStartd = <-startd.matched:
		case fromAgent = <-agent.matched:
		case <-time.After(30 * time.Second):
			t.Fatalf("not both told: startd %q, agent %q", fromStartd, fromAgent)
		}
	}
	if fromStartd != fromAgent {
		t.Errorf("claim ids differ: startd %q, agent %q", fromStartd, fromAgent)
	}

	reply, err := collector.Query(ctx, &wire.QueryRequest{Type: TypeMachine, Constraint: `State == "Matched"`})
	if err != nil || len(reply.Ads) != 1 {
		t.Errorf("matched machines: %v, %v", reply, err)
	}
	_, err = collector.Query(ctx, &wire.QueryRequest{Type: TypeMachine, Constraint: "Memory >"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad constraint: %v, want InvalidArgument", err)
	}
	_, err = collector.Advertise(ctx, &wire.AdvertiseRequest{Type: TypeMachine, Name: "x", Ad: "[ a = ]"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad ad: %v, want InvalidArgument", err)
	}
}

func TestServeRefusesClientWithoutCertificate(t *testing.T) {
	ca := newTestCA(t)
	mmAddr := startMatchmaker(t, ca)
	// The intruder trusts the pool, but the pool does not trust it.
	intruder := newTestCA(t).clientTLS(t, "intruder")
	intruder.RootCAs = ca.pool
	for name, cfg := range map[string]*tls.Config{
		"no certificate": {RootCAs: ca.pool, MinVersion: tls.VersionTLS13},
		"another CA's":   intruder,
	} {
		cc, err := wire.Dial(mmAddr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = wire.NewCollectorClient(cc).Query(ctx, &wire.QueryRequest{Type: TypeMachine})
		cancel()
		cc.Close()
		if err == nil {
			t.Errorf("%s: query accepted", name)
		} else if status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want a refused connection", name, err)
		}
	}
}

func TestNewRequiresClientCertificates(t *testing.T) {
	ca := newTestCA(t)
	cfg := ca.serverTLS(t, "matchmaker")
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if _, err := New(Config{TLS: cfg, ClientTLS: ca.clientTLS(t, "m")}); !errors.Is(err, ErrNoTLS) {
		t.Errorf("New with optional client certificates: %v, want ErrNoTLS", err)
	}
	if _, err := New(Config{ClientTLS: ca.clientTLS(t, "m")}); !errors.Is(err, ErrNoTLS) {
		t.Errorf("New without TLS: %v, want ErrNoTLS", err)
	}
}

func TestNotifierReusesAndDropsConnections(t *testing.T) {
	ca := newTestCA(t)
	agent := &recorder{matched: make(chan string, 4)}
	addr := serveFake(t, ca.serverTLS(t, "agent@a"), func(s *grpc.Server) { wire.RegisterAgentServer(s, agent) })
	n := newGRPCNotifier(ca.clientTLS(t, "matchmaker@test"))
	defer n.Close()
	ctx := context.Background()
	conns := func() int {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.conns)
	}

	for _, claim := range []string{"c1", "c2"} {
		if err := n.AgentMatched(ctx, addr, &wire.MatchedRequest{ClaimId: claim}); err != nil {
			t.Fatalf("notify %s: %v", claim, err)
		}
	}
	if got := conns(); got != 1 {
		t.Errorf("%d cached connections after two calls to one agent, want 1", got)
	}

	// Nothing listens here any more: the call fails and its connection goes.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := lis.Addr().String()
	lis.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.StartdMatched(cctx, gone, &wire.StartdMatchedRequest{}); err == nil {
		t.Error("notifying a closed port succeeded")
	}
	if err := n.StartdMatched(cctx, "", &wire.StartdMatchedRequest{}); !errors.Is(err, errNoAddr) {
		t.Errorf("notifying no address: %v, want errNoAddr", err)
	}
	if got := conns(); got != 1 {
		t.Errorf("%d cached connections after a failure, want the 1 good one", got)
	}
}

func TestServeOnce(t *testing.T) {
	ca := newTestCA(t)
	m, err := New(Config{Logger: quietLogger(), TLS: ca.serverTLS(t, "mm"), ClientTLS: ca.clientTLS(t, "mm")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- m.Serve(ctx, lis) }()
	}
	// One of the two calls is refused at once; the other serves until cancel.
	if err := <-done; !errors.Is(err, ErrServed) {
		t.Errorf("first Serve to return: %v, want ErrServed", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serving Serve: %v", err)
	}
}

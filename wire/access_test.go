package wire

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/pki"
)

// Every method of every service served over the pool's TLS has a line in
// Access; the local Schedd service, served on a Unix socket to users, and
// DaemonAdmin, served on a Unix socket to root, have none (a TLS server
// must not serve them).
func TestAccessCoversEveryMethod(t *testing.T) {
	for _, sd := range []grpc.ServiceDesc{Collector_ServiceDesc, Agent_ServiceDesc, Startd_ServiceDesc, Shadow_ServiceDesc, ShadowIO_ServiceDesc, MatchmakerAdmin_ServiceDesc, MasterAdmin_ServiceDesc} {
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, n := range names {
			full := "/" + sd.ServiceName + "/" + n
			if roles, ok := rolesFor(full); !ok || len(roles) == 0 {
				t.Errorf("%s has no line in Access", full)
			}
		}
	}
	// Nor has a daemon's, served on a socket only root may open.
	for _, sd := range []grpc.ServiceDesc{Schedd_ServiceDesc, DaemonAdmin_ServiceDesc} {
		for _, m := range sd.Methods {
			if _, ok := rolesFor("/" + sd.ServiceName + "/" + m.MethodName); ok {
				t.Errorf("%s.%s is open over TLS", sd.ServiceName, m.MethodName)
			}
		}
	}
}

type matchedAgent struct {
	UnimplementedAgentServer
	callers chan Peer
}

func (a *matchedAgent) Matched(ctx context.Context, _ *MatchedRequest) (*MatchedReply, error) {
	p, _ := PeerOf(ctx)
	a.callers <- p
	return &MatchedReply{}, nil
}

// A server refuses a caller whose certificate's role is not allowed the
// method, and hands an allowed one's identity to the handler.
func TestServerChecksTheCallersRole(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	paths := func(id string) pki.Paths {
		p := pki.HostPaths(dir, filepath.Base(id))
		if err := ca.Issue(id, []string{"127.0.0.1"}, p.Cert, p.Key); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverTLS, err := paths("agent@a").ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	agent := &matchedAgent{callers: make(chan Peer, 1)}
	srv := grpc.NewServer(ServerOptions(serverTLS)...)
	RegisterAgentServer(srv, agent)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	call := func(id string) error {
		cfg, err := paths(id).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cc, err := Dial(lis.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := WithTimeout(context.Background())
		defer cancel()
		_, err = NewAgentClient(cc).Matched(ctx, &MatchedRequest{JobId: "1.0"})
		return err
	}
	for _, id := range []string{"startd@b", "agent@b", "nobody@b", "matchmaker"} {
		if err := call(id); status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s calling Agent.Matched: %v, want PermissionDenied", id, err)
		}
	}
	if err := call("matchmaker@m"); err != nil {
		t.Fatalf("the matchmaker calling Agent.Matched: %v", err)
	}
	if p := <-agent.callers; p.Identity != "matchmaker@m" || p.Role != pki.RoleMatchmaker {
		t.Errorf("the handler saw %+v", p)
	}
}

package peercred

import (
	"context"
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestGRPC serves the gRPC health service on a Unix socket and checks that
// a handler sees this process as the caller.
func TestGRPC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := Listen(path, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan Cred, 1)
	srv := grpc.NewServer(
		grpc.Creds(Credentials()),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			c, ok := FromContext(ctx)
			if !ok {
				t.Errorf("no peer credentials in %s", info.FullMethod)
			}
			seen <- c
			return h(ctx, req)
		}),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(Credentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("status %v", resp.Status)
	}
	c := <-seen
	want := Cred{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), PID: int32(os.Getpid())}
	if c != want {
		t.Errorf("peer credentials %+v, want %+v", c, want)
	}
	name, err := c.Username()
	if err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if name != me.Username {
		t.Errorf("Username() = %q, want %q", name, me.Username)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want 0660", fi.Mode().Perm())
	}
}

func TestFromContextWithoutPeer(t *testing.T) {
	if _, ok := FromContext(t.Context()); ok {
		t.Errorf("FromContext on a bare context reported ok")
	}
}

func TestServerHandshakeNeedsUnixSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := Credentials().ServerHandshake(c); !errors.Is(err, ErrNotUnix) {
		t.Errorf("handshake on TCP: %v, want ErrNotUnix", err)
	}
}

func TestUsernameUnknownUID(t *testing.T) {
	if _, err := (Cred{UID: 4000000000}).Username(); err == nil {
		t.Errorf("Username of an unknown uid succeeded")
	}
}

func TestListenStaleAndBusy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")

	// A socket file left by a process that died.
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	ln, err := Listen(path, 0o600)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()

	if _, err := Listen(path, 0o600); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Listen on a live socket: %v", err)
	}

	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(plain, 0o600); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen on a regular file: %v", err)
	}
	if b, err := os.ReadFile(plain); err != nil || string(b) != "keep me" {
		t.Errorf("regular file was touched: %q, %v", b, err)
	}
}

func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "b.sock")
	ln, err := Listen(path, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(server); err != nil {
			b.Fatal(err)
		}
	}
}

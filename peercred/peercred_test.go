package peercred

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// recorder is a health server that records who called it.
type recorder struct {
	*health.Server
	got chan Cred
}

func (r *recorder) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	c, ok := FromContext(ctx)
	if !ok {
		r.got <- Cred{UID: ^uint32(0)}
	} else {
		r.got <- c
	}
	return r.Server.Check(ctx, req)
}

func TestServerSeesCallersUID(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := Listen(sock, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", st.Mode(), err)
	}
	srv := grpc.NewServer(grpc.Creds(Credentials()))
	rec := &recorder{Server: health.NewServer(), got: make(chan Cred, 1)}
	healthpb.RegisterHealthServer(srv, rec)
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	c := <-rec.got
	if c.UID != uint32(os.Getuid()) || c.GID != uint32(os.Getgid()) || c.PID != int32(os.Getpid()) {
		t.Errorf("server saw %+v; caller is uid %d gid %d pid %d", c, os.Getuid(), os.Getgid(), os.Getpid())
	}
	if name, err := c.Username(); err != nil || name == "" {
		t.Errorf("Username: %q, %v", name, err)
	}
}

func TestListenReplacesStaleSocketOnly(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	l1, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(sock, 0o600); err == nil {
		t.Error("a second listener took over a live socket")
	}
	// A socket file whose server is gone is stale and replaced. (Closing a
	// Go Unix listener removes its file, so make the stale file by hand.)
	l1.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	l1.Close()
	l2, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	regular := filepath.Join(dir, "file")
	os.WriteFile(regular, nil, 0o600)
	if _, err := Listen(regular, 0o600); err == nil {
		t.Error("Listen replaced a regular file")
	}
}

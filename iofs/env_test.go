package iofs_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/iofs"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// env is a job's submit side (a directory and a shadow I/O server on
// loopback with mutual TLS) and its execute side (iofs mounted in a
// temporary directory).
type env struct {
	t         testing.TB
	submit    string // the job's Iwd
	local     string // the execute machine's scratch directory
	mnt       string
	addr      string
	serverTLS *tls.Config
	mapping   *shadow.Mapping
	io        *shadow.IOServer
	grpc      *grpc.Server
	conn      *grpc.ClientConn
	fs        *iofs.Server
}

func requireFUSE(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root and FUSE: mounts iofs (not in -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("iofs tests mount FUSE directly and need root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

// newEnv mounts iofs for a job whose ad has the attributes in extra (ClassAd
// text without brackets, may be empty).
func newEnv(t testing.TB, extra string) *env {
	return newEnvWith(t, extra, iofs.Options{HTTPClient: http.DefaultClient})
}

// newEnvWith mounts with opts; LocalDir and StageDir are filled in.
func newEnvWith(t testing.TB, extra string, opts iofs.Options) *env {
	requireFUSE(t)
	base := t.TempDir()
	e := &env{t: t, submit: filepath.Join(base, "submit", "job"), local: filepath.Join(base, "scratch"), mnt: filepath.Join(base, "mnt")}
	for _, d := range []string{e.submit, e.local, e.mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(base, "ca"), 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CreateCA(filepath.Join(base, "ca"), "test")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(base, "ca", pki.CACertFile)
	// The shadow's server admits starters, which present their startd's
	// certificate.
	for _, id := range []string{"shadow", "starter"} {
		identity := id
		if id == "starter" {
			identity = "startd@test"
		}
		if err := ca.Issue(identity, []string{"127.0.0.1"}, filepath.Join(base, id+".pem"), filepath.Join(base, id+".key")); err != nil {
			t.Fatal(err)
		}
	}
	e.serverTLS, err = pki.ServerConfig(filepath.Join(base, "shadow.pem"), filepath.Join(base, "shadow.key"), caPath)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := pki.ClientConfig(filepath.Join(base, "starter.pem"), filepath.Join(base, "starter.key"), caPath)
	if err != nil {
		t.Fatal(err)
	}

	ad, err := classad.Parse("[ Iwd = " + strconv.Quote(e.submit) + "; " + extra + " ]")
	if err != nil {
		t.Fatal(err)
	}
	m, err := shadow.NewMapping(ad)
	if err != nil {
		t.Fatal(err)
	}
	e.mapping = m
	e.io = shadow.NewIOServer(m, testSecret)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = lis.Addr().String()
	e.serve(lis)

	e.conn, err = wire.Dial(e.addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	client := iofs.NewShadowClient(e.conn, testSecret, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts.LocalDir, opts.StageDir = e.local, base
	e.fs, err = iofs.Mount(ctx, e.mnt, client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.fs.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		e.conn.Close()
		e.grpc.Stop()
		e.io.CloseFiles()
	})
	return e
}

func (e *env) serve(lis net.Listener) {
	e.grpc = grpc.NewServer(append(wire.ServerOptions(e.serverTLS), e.io.ServerOption())...)
	wire.RegisterShadowIOServer(e.grpc, e.io)
	go e.grpc.Serve(lis)
}

// writeSubmit puts a file on the submit side only.
func (e *env) writeSubmit(name, data string) string {
	e.t.Helper()
	p := filepath.Join(e.submit, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) readSubmit(name string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.submit, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

func (e *env) path(name string) string { return filepath.Join(e.mnt, name) }

var fileTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

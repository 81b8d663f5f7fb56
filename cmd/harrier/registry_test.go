package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"harrier.dev/harrier/pki"
)

// testRegistry is go-containerregistry's in-process registry served over
// HTTPS with a certificate of a CA of its own, which execute machines
// are given as IMAGE_REGISTRY_CA. With a user set it asks for that
// user's password (basic authentication), as a private registry does.
type testRegistry struct {
	t      testing.TB
	caFile string
	cert   tls.Certificate
	// addr is where the test itself reaches it, on loopback.
	addr     string
	srv      *http.Server
	user     string
	password string
}

// newTestRegistry starts a registry on loopback whose certificate names
// 127.0.0.1 and hosts; serveIn serves it in a host's network namespace
// too.
func newTestRegistry(t testing.TB, user, password string, hosts ...string) *testRegistry {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "registry")
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "registry.pem"), filepath.Join(dir, "registry.key")
	if err := ca.Issue("registry", append([]string{"127.0.0.1"}, hosts...), cert, key); err != nil {
		t.Fatal(err)
	}
	r := &testRegistry{t: t, caFile: filepath.Join(dir, "ca.pem"), user: user, password: password}
	// The execute machines' starters read it as root; the file is
	// public like any CA certificate.
	if err := os.Chmod(r.caFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if r.cert, err = tls.LoadX509KeyPair(cert, key); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); r.user != "" && (!ok || u != r.user || p != r.password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="harrier-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, req)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{r.cert}}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	r.serve(l)
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func (r *testRegistry) serve(l net.Listener) {
	go func() {
		if err := r.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.t.Errorf("registry: %v", err)
		}
	}()
}

// serveIn serves the registry at addr in the network namespace ns too.
func (r *testRegistry) serveIn(ns, addr string) {
	r.t.Helper()
	l, err := listenInNetns(ns, addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.serve(l)
}

// listenInNetns listens at addr in the named network namespace: a
// socket belongs to the namespace it was made in, whichever thread
// later accepts on it.
func listenInNetns(ns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	c := make(chan result, 1)
	go func() {
		// A thread that cannot come back stays locked, and ends with the
		// goroutine.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			c <- result{err: err}
			return
		}
		defer self.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			c <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			c <- result{err: err}
			return
		}
		l, err := net.Listen("tcp", addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		c <- result{l, err}
	}()
	res := <-c
	return res.l, res.err
}

// push writes img to the registry as repo:tag ("harrier/busybox:1").
func (r *testRegistry) push(repoTag string, img v1.Image) {
	r.t.Helper()
	ref, err := name.ParseReference(r.addr + "/" + repoTag)
	if err != nil {
		r.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(r.caFile)
	if err != nil {
		r.t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	opts := []remote.Option{remote.WithTransport(tr)}
	if r.user != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.password}))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		r.t.Fatalf("push %s: %v", ref, err)
	}
}

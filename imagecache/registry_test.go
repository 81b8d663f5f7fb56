package imagecache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"harrier.dev/harrier/pki"
)

// testRegistry serves go-containerregistry's registry over HTTPS on
// loopback, with a certificate of a CA of its own, in caFile; with a
// password, it asks for basic authentication as user "u".
type testRegistry struct {
	addr, caFile string
	tr           http.RoundTripper
}

func newTestRegistry(tb testing.TB, password string) *testRegistry {
	tb.Helper()
	dir := tb.TempDir()
	ca, err := pki.CreateCA(dir, "registry")
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "r.pem"), filepath.Join(dir, "r.key")
	if err := ca.Issue("registry", []string{"127.0.0.1"}, certFile, keyFile); err != nil {
		tb.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); password != "" && (!ok || u != "u" || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &testRegistry{addr: srv.Listener.Addr().String(), caFile: filepath.Join(dir, "ca.pem"), tr: tr}
}

// push writes img as repo:tag and returns its reference.
func (r *testRegistry) push(tb testing.TB, repoTag string, img v1.Image, auth authn.Authenticator) string {
	tb.Helper()
	ref, err := name.ParseReference(r.addr + "/" + repoTag)
	if err != nil {
		tb.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithTransport(r.tr), remote.WithAuth(auth)); err != nil {
		tb.Fatal(err)
	}
	return "docker://" + ref.String()
}

// Open tells a registry's failures apart, and pulls with the
// credentials given.
func TestOpenRegistry(t *testing.T) {
	ctx := context.Background()
	r := newTestRegistry(t, "pw")
	ref := r.push(t, "lab/tool:1", image(t, layer(t, layerTar(t, entry{name: "a", body: "x"}))), &authn.Basic{Username: "u", Password: "pw"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deaf := l.Addr().String()
	l.Close()
	good := &authn.AuthConfig{Username: "u", Password: "pw"}
	for _, tc := range []struct {
		ref  string
		reg  Registries
		want error
	}{
		{ref, Registries{CAFile: r.caFile, Auth: good}, nil},
		{ref, Registries{CAFile: r.caFile}, ErrRegistryDenied},
		{ref, Registries{CAFile: r.caFile, Auth: &authn.AuthConfig{Username: "u", Password: "no"}}, ErrRegistryDenied},
		{"docker://" + r.addr + "/lab/none:1", Registries{CAFile: r.caFile, Auth: good}, ErrNotInRegistry},
		{"docker://" + deaf + "/lab/tool:1", Registries{CAFile: r.caFile, Auth: good}, ErrRegistryUnreachable},
	} {
		_, err := Open(ctx, tc.ref, tc.reg)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Open(%s, auth %v): %v, want %v", tc.ref, tc.reg.Auth != nil, err, tc.want)
		}
	}
	// Without the registry's CA its certificate is not trusted, and
	// plain HTTP is never tried instead.
	if _, err := Open(ctx, ref, Registries{Auth: good}); err == nil || errors.Is(err, ErrNotInRegistry) {
		t.Errorf("Open without the CA: %v", err)
	}
}

// BenchmarkRegistryPull50MBCold pulls a 50 MiB image (5 layers) from a
// registry over HTTPS on loopback into an empty cache: fetch, verify,
// unpack, sync, as a job's cold start does.
func BenchmarkRegistryPull50MBCold(b *testing.B) {
	needRoot(b)
	r := newTestRegistry(b, "")
	ref := r.push(b, "lab/big:1", bigImage(b), authn.Anonymous)
	b.SetBytes(50 << 20)
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(b.TempDir(), 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		img, err := Open(context.Background(), ref, Registries{CAFile: r.caFile})
		if err != nil {
			b.Fatal(err)
		}
		im, err := c.Acquire(context.Background(), img, ref)
		if err != nil {
			b.Fatal(err)
		}
		if im.Unpacked != 5 {
			b.Fatalf("unpacked %d layers, want 5", im.Unpacked)
		}
		im.Release()
	}
}

// BenchmarkRegistryPull50MBWarm is a job's warm start of the same image:
// the registry is asked for the manifest, the layers are in the cache.
func BenchmarkRegistryPull50MBWarm(b *testing.B) {
	needRoot(b)
	r := newTestRegistry(b, "")
	ref := r.push(b, "lab/big:1", bigImage(b), authn.Anonymous)
	c, err := New(b.TempDir(), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	acquire := func() *Image {
		img, err := Open(context.Background(), ref, Registries{CAFile: r.caFile})
		if err != nil {
			b.Fatal(err)
		}
		im, err := c.Acquire(context.Background(), img, ref)
		if err != nil {
			b.Fatal(err)
		}
		return im
	}
	acquire().Release()
	b.ReportAllocs()
	for b.Loop() {
		im := acquire()
		if im.Unpacked != 0 {
			b.Fatalf("a cached image unpacked %d layers", im.Unpacked)
		}
		im.Release()
	}
}

// An image pulled from a registry is listed under its reference and its
// digest, most recently used first, within the bound asked for.
func TestNames(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	r := newTestRegistry(t, "")
	refA := r.push(t, "lab/a:1", image(t, layer(t, layerTar(t, entry{name: "a", body: "a"}))), authn.Anonymous)
	refB := r.push(t, "lab/b:1", image(t, layer(t, layerTar(t, entry{name: "b", body: "b"}))), authn.Anonymous)
	dir := t.TempDir()
	c, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, ref := range []string{refA, refB} {
		img, err := Open(ctx, ref, Registries{CAFile: r.caFile})
		if err != nil {
			t.Fatal(err)
		}
		im, err := c.Acquire(ctx, img, ref)
		if err != nil {
			t.Fatal(err)
		}
		im.Release()
		digests = append(digests, im.Digest)
		// Records' times are their modification times.
		time.Sleep(10 * time.Millisecond)
	}
	got, err := Names(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{r.addr + "/lab/b:1", r.addr + "/lab/b@" + digests[1], r.addr + "/lab/a:1"}
	if !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if n := NormalName(refA); n != r.addr+"/lab/a:1" {
		t.Errorf("NormalName(%s) = %s", refA, n)
	}
}

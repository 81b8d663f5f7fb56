package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pool is a CA directory with helpers to issue host files in it.
type pool struct {
	t   *testing.T
	dir string
	ca  *CA
}

func newPool(t *testing.T, name string) *pool {
	t.Helper()
	dir := t.TempDir()
	ca, err := CreateCA(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return &pool{t: t, dir: dir, ca: ca}
}

// issue issues identity's certificate and returns its paths.
func (p *pool) issue(name, identity string, hosts ...string) Paths {
	p.t.Helper()
	paths := HostPaths(p.dir, name)
	if err := p.ca.Issue(identity, hosts, paths.Cert, paths.Key); err != nil {
		p.t.Fatal(err)
	}
	return paths
}

// issueTemplate signs a certificate made from tmpl with signer (the CA's
// certificate and key unless given) and writes it under name.
func (p *pool) issueTemplate(name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) Paths {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = p.ca.cert, p.ca.key
	}
	tmpl.SerialNumber, _ = newSerial()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		p.t.Fatal(err)
	}
	paths := HostPaths(p.dir, name)
	if err := writeKey(paths.Key, key, false); err != nil {
		p.t.Fatal(err)
	}
	if err := writeCert(paths.Cert, der); err != nil {
		p.t.Fatal(err)
	}
	return paths
}

type result struct {
	state tls.ConnectionState
	err   error
}

// handshake runs a TLS handshake between the two configurations over an
// loopback TCP connection (buffered, unlike net.Pipe, so that an alert
// does not block) and returns what each side saw.
func handshake(tb testing.TB, server, client *tls.Config) (srv, cli result) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan result)
	go func() {
		s := tls.Server(sc, server)
		err := s.Handshake()
		if err == nil {
			// In TLS 1.3 the client's certificate is checked after the
			// client has finished; a read makes a rejection visible.
			_, err = s.Read(make([]byte, 1))
		}
		sc.Close()
		done <- result{s.ConnectionState(), err}
	}()
	c := tls.Client(cc, client)
	err = c.Handshake()
	if err == nil {
		_, err = c.Write([]byte{1})
	}
	cli = result{c.ConnectionState(), err}
	cc.Close()
	srv = <-done
	return srv, cli
}

func configs(t *testing.T, server, client Paths) (*tls.Config, *tls.Config) {
	t.Helper()
	s, err := server.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestMutualTLS(t *testing.T) {
	p := newPool(t, "alpha")
	mm := p.issue("matchmaker", "matchmaker@host1", "10.0.0.1", "host1.example.org")
	ag := p.issue("agent", "agent@host2")
	s, c := configs(t, mm, ag)
	c.ServerName = "192.0.2.99" // not in the certificate: names are not checked
	srv, cli := handshake(t, s, c)
	if srv.err != nil || cli.err != nil {
		t.Fatalf("handshake: server %v, client %v", srv.err, cli.err)
	}
	if got, err := Identity(srv.state); err != nil || got != "agent@host2" {
		t.Errorf("server sees %q, %v; want agent@host2", got, err)
	}
	if got, err := Identity(cli.state); err != nil || got != "matchmaker@host1" {
		t.Errorf("client sees %q, %v; want matchmaker@host1", got, err)
	}
	if srv.state.Version != tls.VersionTLS13 {
		t.Errorf("version %x, want TLS 1.3", srv.state.Version)
	}
	leaf := cli.state.PeerCertificates[0]
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) || !slices.Equal(leaf.DNSNames, []string{"host1.example.org"}) {
		t.Errorf("SANs = %v %v", leaf.IPAddresses, leaf.DNSNames)
	}
}

func TestRefused(t *testing.T) {
	p := newPool(t, "alpha")
	// Another pool, even one with the same name, has its own CA key.
	other := newPool(t, "alpha")
	server := p.issue("matchmaker", "matchmaker@host1")
	client := p.issue("agent", "agent@host1")
	now := time.Now()
	expired := p.issueTemplate("expired", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "startd@old"},
		NotBefore:   now.Add(-3 * 365 * 24 * time.Hour),
		NotAfter:    now.Add(-time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, nil, nil)
	serverOnly := p.issueTemplate("serveronly", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "web@host1"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, nil, nil)
	// A daemon's own key must not be able to mint identities.
	clientCert, err := readCerts(client.Cert)
	if err != nil {
		t.Fatal(err)
	}
	clientKey, err := readKey(client.Key)
	if err != nil {
		t.Fatal(err)
	}
	forged := p.issueTemplate("forged", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "matchmaker@host1"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, clientCert[0], clientKey)
	stranger := other.issue("agent", "agent@host1")
	strangerServer := other.issue("matchmaker", "matchmaker@host1")
	// The strangers trust our CA (it is public), so only their own
	// certificate can be the reason for a refusal.
	stranger.CA, strangerServer.CA = client.CA, client.CA

	tests := []struct {
		name           string
		server, client Paths
		serverRefuses  bool // else the client refuses
		want           string
	}{
		{"client from another pool", server, stranger, true, "unknown authority"},
		{"server from another pool", strangerServer, client, false, "unknown authority"},
		{"expired client", server, expired, true, "expired"},
		{"expired server", expired, client, false, "expired"},
		{"client without client usage", server, serverOnly, true, "key usage"},
		{"client cert signed by a daemon", server, forged, true, "verify peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := configs(t, tt.server, tt.client)
			srv, cli := handshake(t, s, c)
			refused := cli.err
			if tt.serverRefuses {
				refused = srv.err
			}
			if refused == nil || !strings.Contains(refused.Error(), tt.want) {
				t.Fatalf("refusal = %v, want one mentioning %q (server %v, client %v)", refused, tt.want, srv.err, cli.err)
			}
		})
	}

	t.Run("missing client certificate", func(t *testing.T) {
		s, c := configs(t, server, client)
		c.Certificates = nil
		srv, _ := handshake(t, s, c)
		if srv.err == nil || !strings.Contains(srv.err.Error(), "certificate") {
			t.Fatalf("server error = %v, want a refusal for the missing certificate", srv.err)
		}
	})
}

func TestVerifierWithoutCertificate(t *testing.T) {
	v := verifier(x509.NewCertPool(), x509.ExtKeyUsageClientAuth)
	if err := v(tls.ConnectionState{}); !errors.Is(err, ErrNoPeerCertificate) {
		t.Errorf("error = %v, want ErrNoPeerCertificate", err)
	}
	if _, err := Identity(tls.ConnectionState{HandshakeComplete: true}); !errors.Is(err, ErrNoPeerCertificate) {
		t.Errorf("Identity error = %v", err)
	}
}

func TestCreateAndLoadCA(t *testing.T) {
	p := newPool(t, "alpha")
	for name, want := range map[string]fs.FileMode{CACertFile: 0o644, CAKeyFile: 0o600} {
		fi, err := os.Stat(filepath.Join(p.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	cert := p.ca.Certificate()
	if !cert.IsCA || cert.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CA certificate: IsCA %v, algorithm %v", cert.IsCA, cert.PublicKeyAlgorithm)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 10*365*24*time.Hour {
		t.Errorf("CA valid for %v, want ten years", life)
	}
	if _, err := CreateCA(p.dir, "alpha"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreateCA error = %v, want ErrExist", err)
	}

	loaded, err := LoadCA(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Certificate().Equal(cert) {
		t.Errorf("loaded CA certificate differs")
	}
	// A certificate issued by the loaded CA is accepted by one made with
	// the original.
	paths := HostPaths(p.dir, "startd")
	if err := loaded.Issue("startd@host3", nil, paths.Cert, paths.Key); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(paths.Key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	certs, err := readCerts(paths.Cert)
	if err != nil {
		t.Fatal(err)
	}
	leaf := certs[0]
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life < 2*365*24*time.Hour || life > 3*365*24*time.Hour {
		t.Errorf("leaf valid for %v, want two years", life)
	}
	if err := leaf.CheckSignatureFrom(cert); err != nil {
		t.Errorf("leaf not signed by the pool CA: %v", err)
	}

	other := newPool(t, "beta")
	if err := os.Rename(filepath.Join(other.dir, CAKeyFile), filepath.Join(p.dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(p.dir); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("LoadCA with a foreign key: %v", err)
	}
	if _, err := LoadCA(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadCA of empty dir: %v", err)
	}
	if err := loaded.Issue("", nil, paths.Cert, paths.Key); err == nil {
		t.Errorf("Issue with empty identity succeeded")
	}
}

func BenchmarkHandshake(b *testing.B) {
	dir := b.TempDir()
	ca, err := CreateCA(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	s, c := HostPaths(dir, "s"), HostPaths(dir, "c")
	if err := ca.Issue("matchmaker@h", nil, s.Cert, s.Key); err != nil {
		b.Fatal(err)
	}
	if err := ca.Issue("agent@h", nil, c.Cert, c.Key); err != nil {
		b.Fatal(err)
	}
	sc, err := s.ServerConfig()
	if err != nil {
		b.Fatal(err)
	}
	cc, err := c.ClientConfig()
	if err != nil {
		b.Fatal(err)
	}
	cc.SessionTicketsDisabled = true
	b.ReportAllocs()
	for b.Loop() {
		srv, cli := handshake(b, sc, cc)
		if srv.err != nil || cli.err != nil {
			b.Fatal(srv.err, cli.err)
		}
	}
}

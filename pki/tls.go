package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
)

// ErrNoPeerCertificate is returned when the peer presented no certificate.
var ErrNoPeerCertificate = errors.New("peer presented no certificate")

// Paths names the files a daemon needs for mutual TLS.
type Paths struct {
	CA   string // the pool CA certificate, ca.pem
	Cert string // this daemon's certificate
	Key  string // this daemon's private key
}

// HostPaths returns the conventional paths in a host's directory:
// dir/ca.pem, dir/name.pem and dir/name.key.
func HostPaths(dir, name string) Paths {
	return Paths{
		CA:   filepath.Join(dir, CACertFile),
		Cert: filepath.Join(dir, name+".pem"),
		Key:  filepath.Join(dir, name+".key"),
	}
}

// ServerConfig is shorthand for ServerConfig(p.Cert, p.Key, p.CA).
func (p Paths) ServerConfig() (*tls.Config, error) { return ServerConfig(p.Cert, p.Key, p.CA) }

// ClientConfig is shorthand for ClientConfig(p.Cert, p.Key, p.CA).
func (p Paths) ClientConfig() (*tls.Config, error) { return ClientConfig(p.Cert, p.Key, p.CA) }

// ServerConfig returns a TLS 1.3 server configuration that presents the
// certificate in certPath and requires every client to present a
// certificate for client authentication that chains to the CA in caPath.
// Host names are not checked (see the package documentation).
func ServerConfig(certPath, keyPath, caPath string) (*tls.Config, error) {
	cert, roots, err := load(certPath, keyPath, caPath)
	if err != nil {
		return nil, fmt.Errorf("server TLS config: %w", err)
	}
	return serverConfig(cert, roots), nil
}

func serverConfig(cert tls.Certificate, roots *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// The chain is verified in VerifyConnection, the same way on both
		// sides; asking for any certificate makes a missing one fail the
		// handshake here already.
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: verifier(roots, x509.ExtKeyUsageClientAuth),
	}
}

// ClientConfig returns a TLS 1.3 client configuration that presents the
// certificate in certPath and accepts only a server whose certificate, for
// server authentication, chains to the CA in caPath. Host names are not
// checked (see the package documentation), so ServerName need not be set.
func ClientConfig(certPath, keyPath, caPath string) (*tls.Config, error) {
	cert, roots, err := load(certPath, keyPath, caPath)
	if err != nil {
		return nil, fmt.Errorf("client TLS config: %w", err)
	}
	return clientConfig(cert, roots), nil
}

func clientConfig(cert tls.Certificate, roots *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // replaced by VerifyConnection, which skips only the host name
		VerifyConnection:   verifier(roots, x509.ExtKeyUsageServerAuth),
	}
}

// load reads a key pair and a CA certificate pool.
func load(certPath, keyPath, caPath string) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cas, err := readCerts(caPath)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	return cert, roots, nil
}

// verifier returns a VerifyConnection function that verifies the peer's
// chain to roots for usage, the full verification crypto/tls would do
// except for the host name.
func verifier(roots *x509.CertPool, usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return ErrNoPeerCertificate
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{usage},
		})
		if err != nil {
			return fmt.Errorf("verify peer %q: %w", leaf.Subject.CommonName, err)
		}
		if leaf.Subject.CommonName == "" {
			return errors.New("verify peer: certificate has no common name")
		}
		return nil
	}
}

// Identity returns the peer's identity, the common name of its certificate,
// from the state of a connection made with ServerConfig or ClientConfig,
// whose handshake has verified the certificate. On a connection made with
// another configuration the name is not verified and must not be trusted.
func Identity(state tls.ConnectionState) (string, error) {
	if !state.HandshakeComplete {
		return "", errors.New("peer identity: handshake not complete")
	}
	if len(state.PeerCertificates) == 0 {
		return "", ErrNoPeerCertificate
	}
	cn := state.PeerCertificates[0].Subject.CommonName
	if cn == "" {
		return "", errors.New("peer identity: certificate has no common name")
	}
	return cn, nil
}

// UserServerConfig returns a TLS 1.3 server configuration that presents
// the certificate in certPath and asks the client for none: a server for
// users, who hold no pool certificate and prove who they are otherwise
// (the agent's remote API takes a token with every call). Callers of such
// a server have no verified identity in the TLS sense.
func UserServerConfig(certPath, keyPath string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("user server TLS config: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}, nil
}

// UserClientConfig returns a TLS 1.3 client configuration that presents no
// certificate and accepts only a server whose certificate, for server
// authentication, chains to the CA certificates in caPEM and has one of
// roles. Host names are not checked, as for the daemons.
func UserClientConfig(caPEM []byte, roles ...Role) (*tls.Config, error) {
	cas, err := parseCerts(caPEM, "the pool CA")
	if err != nil {
		return nil, fmt.Errorf("user client TLS config: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	return ExpectRole(&tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by VerifyConnection, which skips only the host name
		VerifyConnection:   verifier(roots, x509.ExtKeyUsageServerAuth),
	}, roles...), nil
}

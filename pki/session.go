package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// A Session is the TLS identity of a process that must hold no pool
// certificate: a shadow runs as a job's owner, who could read anything it
// holds, so it gets no key that the CA signed. It makes a key pair of its
// own instead, for its lifetime only, and a self-signed certificate that
// its peers pin by fingerprint, which they learn from a daemon they
// already trust (the starter learns the shadow's from its startd, which
// learns it from the agent that started the shadow).
type Session struct {
	cert tls.Certificate
	fp   string
}

// sessionValidity bounds a session certificate; the process that made it
// is usually gone long before.
const sessionValidity = 30 * 24 * time.Hour

// NewSession makes a fresh key pair and self-signed certificate.
func NewSession() (*Session, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, fmt.Errorf("session certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "harrier session"},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(sessionValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("session certificate: %w", err)
	}
	return &Session{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, fp: Fingerprint(der)}, nil
}

// Fingerprint is what peers pin: the hex SHA-256 of the certificate.
func (s *Session) Fingerprint() string { return s.fp }

// ServerConfig returns a TLS 1.3 server configuration that presents the
// session certificate and requires every client to present a certificate
// for client authentication that chains to the pool CA in caPEM; like
// ServerConfig's, the peer's identity is then Identity's business.
func (s *Session) ServerConfig(caPEM []byte) (*tls.Config, error) {
	cas, err := parseCerts(caPEM, "CA")
	if err != nil {
		return nil, fmt.Errorf("session TLS config: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	return serverConfig(s.cert, roots), nil
}

// Fingerprint returns the hex SHA-256 of a DER certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ErrFingerprint reports a server whose certificate is not the pinned one.
var ErrFingerprint = errors.New("server certificate does not match the pinned fingerprint")

// PinnedClientConfig returns a TLS 1.3 client configuration that presents
// the pool certificate in certPath and accepts only a server whose
// certificate has the given fingerprint (a Session's).
func PinnedClientConfig(certPath, keyPath, fingerprint string) (*tls.Config, error) {
	if fingerprint == "" {
		return nil, errors.New("pinned TLS config: no fingerprint")
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("pinned TLS config: %w", err)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // replaced by the pin
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrNoPeerCertificate
			}
			if Fingerprint(cs.PeerCertificates[0].Raw) != fingerprint {
				return ErrFingerprint
			}
			return nil
		},
	}, nil
}

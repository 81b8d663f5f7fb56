// Package pki creates a pool's certificate authority, issues daemon
// certificates from it and builds the mutual-TLS configurations with which
// Harrier daemons authenticate each other.
//
// Every pool has its own CA, made by "harrier pool up" (CreateCA) and kept in
// a directory as ca.pem and ca.key. Each daemon gets a certificate whose
// common name is its identity, such as "matchmaker@host1", "agent@host1" or
// "startd@host2", and which is valid for both client and server use. A
// host's directory typically holds ca.pem, <name>.pem and <name>.key; see
// HostPaths.
//
// Peers are identified by the certificate's common name, not by host name.
// Verification therefore checks that the peer's certificate chains to the
// pool CA, is within its validity period and carries the right extended key
// usage, but does not compare the certificate's names with the address
// dialled: daemons in a pool are addressed by IP as often as by name, and
// behind NAT or in network namespaces the address a peer is reached by is
// often not one it knows about. The configurations returned by ServerConfig
// and ClientConfig set InsecureSkipVerify and do the chain verification
// themselves in VerifyConnection, which, unlike VerifyPeerCertificate, also
// runs on resumed sessions. Authorisation is the caller's business: use
// Identity on the connection state to learn who the peer is.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"time"
)

// File names of the CA inside its directory.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca.key"
)

// Validity periods. NotBefore is backdated a little so that a certificate is
// usable at once on a host whose clock is slightly behind.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 2 * 365 * 24 * time.Hour
	clockSkew    = 5 * time.Minute
)

// A CA is a pool certificate authority with its private key.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Certificate returns the CA certificate. The caller must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CreateCA creates a new CA for the pool named poolName in dir, writing
// ca.pem (mode 0644) and ca.key (mode 0600): an ECDSA P-256 key and a
// self-signed certificate valid for ten years. It refuses to overwrite an
// existing ca.key, since that would orphan every certificate already issued.
func CreateCA(dir, poolName string) (*CA, error) {
	if poolName == "" {
		return nil, errors.New("create CA: empty pool name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Harrier pool CA " + poolName, Organization: []string{poolName}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	if err := writeKey(filepath.Join(dir, CAKeyFile), key, true); err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	if err := writeCert(filepath.Join(dir, CACertFile), der); err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	return &CA{cert: cert, key: key}, nil
}

// LoadCA reads the CA certificate and key that CreateCA wrote in dir.
func LoadCA(dir string) (*CA, error) {
	certs, err := readCerts(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	key, err := readKey(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	cert := certs[0]
	if !cert.IsCA {
		return nil, fmt.Errorf("load CA: %s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("load CA: %s does not match %s", CAKeyFile, CACertFile)
	}
	return &CA{cert: cert, key: key}, nil
}

// Issue creates a key and a certificate signed by the CA for identity, the
// peer name daemons will see (e.g. "startd@host2"), and writes them to
// certPath (mode 0644) and keyPath (mode 0600), replacing any files there.
// The certificate is valid for two years, for both client and server
// authentication; hosts (IP addresses or DNS names, possibly none) become
// its subject alternative names for the benefit of tools that check them.
func (ca *CA) Issue(identity string, hosts []string, certPath, keyPath string) error {
	if identity == "" {
		return errors.New("issue certificate: empty identity")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("issue certificate for %s: %w", identity, err)
	}
	der, err := ca.sign(identity, hosts, &key.PublicKey, time.Now(), leafValidity)
	if err != nil {
		return fmt.Errorf("issue certificate for %s: %w", identity, err)
	}
	if err := writeKey(keyPath, key, false); err != nil {
		return fmt.Errorf("issue certificate for %s: %w", identity, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return fmt.Errorf("issue certificate for %s: %w", identity, err)
	}
	return nil
}

// sign returns a DER leaf certificate for pub valid from now for validity.
func (ca *CA) sign(identity string, hosts []string, pub *ecdsa.PublicKey, now time.Time, validity time.Duration) ([]byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: identity, Organization: ca.cert.Subject.Organization},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
}

// newSerial returns a random 128-bit serial number, as RFC 5280 recommends.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

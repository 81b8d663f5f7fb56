package pki

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"harrier.dev/harrier/atomicfile"
)

// writeKey writes key in PKCS #8 PEM form with mode 0600. With exclusive set
// it fails if path already exists.
func writeKey(path string, key *ecdsa.PrivateKey, exclusive bool) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	return writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600, exclusive)
}

// writeCert writes a DER certificate in PEM form with mode 0644.
func writeCert(path string, der []byte) error {
	return writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644, false)
}

// writeFile writes data to path atomically: readers see the old file or the
// complete new one, never a torn key. With exclusive set it fails if path
// exists.
func writeFile(path string, data []byte, mode os.FileMode, exclusive bool) error {
	if exclusive {
		return atomicfile.Create(path, data, mode)
	}
	return atomicfile.Write(path, data, mode)
}

// readCerts reads the PEM certificates in path; there must be at least one.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCerts(data, path)
}

// parseCerts parses PEM certificates from data (named name in errors).
func parseCerts(data []byte, name string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", name)
	}
	return certs, nil
}

// readKey reads an ECDSA private key in PKCS #8 or SEC 1 PEM form.
func readKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	switch b.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: not an ECDSA key", path)
		}
		return ek, nil
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		return k, nil
	}
	return nil, errors.New(path + ": unexpected PEM block " + b.Type)
}

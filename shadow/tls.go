package shadow

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"harrier.dev/harrier/pki"
)

// tlsConfigs builds the shadow's server and client TLS from the material in
// its spec. pki works on files, so the material is written to a private
// directory that is removed again at once.
func tlsConfigs(spec *Spec) (server, client *tls.Config, err error) {
	dir, err := os.MkdirTemp("", "harrier-shadow-tls-")
	if err != nil {
		return nil, nil, fmt.Errorf("shadow TLS: %w", err)
	}
	defer os.RemoveAll(dir)
	paths := [3]string{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")}
	for i, data := range [3][]byte{spec.CertPEM, spec.KeyPEM, spec.CAPEM} {
		if err := os.WriteFile(paths[i], data, 0o600); err != nil {
			return nil, nil, fmt.Errorf("shadow TLS: %w", err)
		}
	}
	if server, err = pki.ServerConfig(paths[0], paths[1], paths[2]); err != nil {
		return nil, nil, fmt.Errorf("shadow TLS: %w", err)
	}
	if client, err = pki.ClientConfig(paths[0], paths[1], paths[2]); err != nil {
		return nil, nil, fmt.Errorf("shadow TLS: %w", err)
	}
	return server, client, nil
}

package shadow

import (
	"crypto/tls"
	"fmt"

	"harrier.dev/harrier/pki"
)

// tlsConfigs builds the shadow's server and client TLS from the material in
// its spec.
func tlsConfigs(spec *Spec) (server, client *tls.Config, err error) {
	server, client, err = pki.ConfigsFromPEM(spec.CertPEM, spec.KeyPEM, spec.CAPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("shadow: %w", err)
	}
	return server, client, nil
}

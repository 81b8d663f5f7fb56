package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/pki"
)

// The pool's configuration file inside a pool directory.
const poolConfigName = "pool.conf"

// poolConfig is a loaded pool configuration with the conventions every
// daemon and tool shares.
type poolConfig struct {
	path string
	c    *config.Config
}

func loadPoolConfig(path string) (*poolConfig, error) {
	c, err := config.Load(path, configOptions())
	if err != nil {
		return nil, err
	}
	return &poolConfig{path: path, c: c}, nil
}

// require returns a configured value or an error naming the key.
func (p *poolConfig) require(key string) (string, error) {
	v, ok := p.c.Lookup(key)
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%s: %s is not set", p.path, key)
	}
	return strings.TrimSpace(v), nil
}

// pkiPaths returns the CA and the certificate and key of one role
// ("matchmaker", "agent", "startd") in the pool's PKI directory.
func (p *poolConfig) pkiPaths(role string) (ca, cert, key string, err error) {
	dir, err := p.require("PKI_DIR")
	if err != nil {
		return "", "", "", err
	}
	return filepath.Join(dir, "ca.pem"), filepath.Join(dir, role+".pem"), filepath.Join(dir, role+".key"), nil
}

// checkpointKeyPath is the pool's checkpoint key: CHECKPOINT_KEY_FILE,
// by default checkpoint.key in the PKI directory.
func (p *poolConfig) checkpointKeyPath() (string, error) {
	if v := strings.TrimSpace(p.c.String("CHECKPOINT_KEY_FILE", "")); v != "" {
		return v, nil
	}
	dir, err := p.require("PKI_DIR")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, checkpointKeyName), nil
}

// checkpointKeyName is the pool's checkpoint key in its PKI directory.
const checkpointKeyName = "checkpoint.key"

// tlsConfigs returns the server and client TLS configurations of a role.
func (p *poolConfig) tlsConfigs(role string) (server, client *tls.Config, err error) {
	ca, cert, key, err := p.pkiPaths(role)
	if err != nil {
		return nil, nil, err
	}
	if server, err = pki.ServerConfig(cert, key, ca); err != nil {
		return nil, nil, fmt.Errorf("%s TLS: %w", role, err)
	}
	if client, err = pki.ClientConfig(cert, key, ca); err != nil {
		return nil, nil, fmt.Errorf("%s TLS: %w", role, err)
	}
	return server, client, nil
}

// findPool locates the pool a tool talks to: --pool DIR, then HARRIER_POOL.
func findPool(flagDir string) (*poolConfig, error) {
	dir := flagDir
	if dir == "" {
		dir = os.Getenv("HARRIER_POOL")
	}
	if dir == "" {
		return nil, usagef("no pool: give --pool DIR or set HARRIER_POOL")
	}
	return loadPoolConfig(filepath.Join(dir, poolConfigName))
}

// hostName is this machine's name, for daemon names.
func hostName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// matchmakerStateFile is where the matchmaker keeps state across restarts:
// the file key names, by default name in SPOOL (or in $(POOL_DIR)/spool).
// Its directory is made if missing. The matchmaker keeps its accountant
// in ACCOUNTANT_FILE (accountant.json) and its recent cycles' statistics
// in NEGOTIATOR_STATS_FILE (negotiator.json).
func (p *poolConfig) matchmakerStateFile(key, name string) (string, error) {
	path := p.c.String(key, "")
	if path == "" {
		spool := p.c.String("SPOOL", "")
		if spool == "" {
			spool = filepath.Join(p.c.String("POOL_DIR", filepath.Dir(p.path)), "spool")
		}
		path = filepath.Join(spool, name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return path, nil
}

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// TestDaemonsRefuseStrangers checks that a pool's daemons talk only to peers
// with a certificate from the pool's own CA.
func TestDaemonsRefuseStrangers(t *testing.T) {
	p := startPool(t, 1)
	pc, err := loadPoolConfig(filepath.Join(p.dir, poolConfigName))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		t.Fatal(err)
	}
	query := func(cert, key, ca string) error {
		cfg, err := pki.ClientConfig(cert, key, ca)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := wire.Dial(addr, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = wire.NewCollectorClient(conn).Query(ctx, &wire.QueryRequest{Type: "Machine"})
		return err
	}

	// A member of the pool is answered: the test below means something.
	ca, cert, key, err := pc.pkiPaths("agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := query(cert, key, ca); err != nil {
		t.Fatalf("pool member refused: %v", err)
	}

	// A certificate from another pool's CA is refused, even by a client
	// that trusts this pool's CA.
	other := t.TempDir()
	otherCA, err := pki.CreateCA(other, "other-pool")
	if err != nil {
		t.Fatal(err)
	}
	if err := otherCA.Issue("agent@intruder", []string{"127.0.0.1"}, filepath.Join(other, "x.pem"), filepath.Join(other, "x.key")); err != nil {
		t.Fatal(err)
	}
	if err := query(filepath.Join(other, "x.pem"), filepath.Join(other, "x.key"), ca); err == nil {
		t.Error("the matchmaker answered a peer with a foreign certificate")
	}
}

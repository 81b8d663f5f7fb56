package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"harrier.dev/harrier/wire"
)

// BenchmarkRemoteQuery is what a call costs through the remote API (TLS,
// a token checked: signature, registry, user, scope) beside the same call
// on the agent's Unix socket: a Query of the (empty) queue, on one
// connection each, in one personal pool.
func BenchmarkRemoteQuery(b *testing.B) {
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p := startPoolWith(b, 1, "AGENT_REMOTE_ADDRESS = "+addr+"\n")
	u := newUser(b)
	dir := b.TempDir()
	tokens, closeTokens, err := tokensClient(p.dir)
	if err != nil {
		b.Fatal(err)
	}
	defer closeTokens()
	reply, err := tokens.Create(context.Background(), &wire.CreateTokenRequest{Identity: u.Username, Scopes: []string{"read"}})
	if err != nil {
		b.Fatal(err)
	}
	tokenPath := filepath.Join(dir, "token")
	writeFile(b, tokenPath, reply.Token, 0o600)
	caPath := filepath.Join(dir, "ca.pem")
	writeFile(b, caPath, string(reply.CaPem), 0o644)
	b.Setenv("HARRIER_CA_FILE", caPath)

	pc, err := findPool(p.dir)
	if err != nil {
		b.Fatal(err)
	}
	local, closeLocal, err := agentClient(pc)
	if err != nil {
		b.Fatal(err)
	}
	defer closeLocal()
	remote, closeRemote, err := remoteClient(addr, tokenPath)
	if err != nil {
		b.Fatal(err)
	}
	defer closeRemote()
	query := func(b *testing.B, c wire.ScheddClient) {
		stream, err := c.Query(context.Background(), &wire.JobQueryRequest{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name   string
		client wire.ScheddClient
	}{{"local", local}, {"remote", remote}} {
		b.Run(c.name, func(b *testing.B) {
			query(b, c.client) // connect first
			b.ReportAllocs()
			for b.Loop() {
				query(b, c.client)
			}
		})
	}
}

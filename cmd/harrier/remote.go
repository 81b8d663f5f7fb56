package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// remotePort is the remote API's port when -remote names none.
const remotePort = "9619"

// userDir is where a user keeps what the remote API needs: the pool's CA
// certificate (ca.pem) and tokens (tokens/NAME), as HTCondor keeps them in
// ~/.condor/tokens.d.
func userDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory: %w", err)
	}
	return filepath.Join(home, ".harrier"), nil
}

// remoteClient connects to the agent's remote API at addr (HOST[:PORT]).
// The agent is authenticated by the pool's CA ($HARRIER_CA_FILE, or
// ~/.harrier/ca.pem); every call carries the token in tokenFile, or
// $HARRIER_TOKEN, or the one in ~/.harrier/tokens/ that the agent on
// addr's host issued.
func remoteClient(addr, tokenFile string) (wire.ScheddClient, func(), error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, remotePort)
	}
	host, _, _ := net.SplitHostPort(addr)
	text, err := findToken(tokenFile, host)
	if err != nil {
		return nil, nil, err
	}
	caFile := os.Getenv("HARRIER_CA_FILE")
	if caFile == "" {
		dir, err := userDir()
		if err != nil {
			return nil, nil, err
		}
		caFile = filepath.Join(dir, pki.CACertFile)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("the pool's CA certificate, which authenticates the agent (set HARRIER_CA_FILE or copy it to ~/.harrier/ca.pem): %w", err)
	}
	cfg, err := pki.UserClientConfig(caPEM, pki.RoleAgent)
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithPerRPCCredentials(bearer(text)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessage), grpc.MaxCallSendMsgSize(wire.MaxMessage)))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the agent's remote API at %s: %w", addr, err)
	}
	return wire.NewScheddClient(conn), func() { conn.Close() }, nil
}

// bearer sends a token with every call, over TLS only.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{agent.TokenMetadata: "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// findToken reads the token to call host's agent with: the one in file,
// else in $HARRIER_TOKEN (a file), else the newest unexpired one in
// ~/.harrier/tokens/ issued by host's agent, else the only one there.
func findToken(file, host string) (string, error) {
	if file == "" {
		file = os.Getenv("HARRIER_TOKEN")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	dir, err := userDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "tokens")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the tokens: %w", err)
	}
	type found struct {
		text string
		c    token.Claims
	}
	var all []found
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || !e.Type().IsRegular() {
			continue
		}
		text := strings.TrimSpace(string(b))
		// Only to choose a token: the agent verifies what it is sent.
		c, err := token.Unverified(text)
		if err != nil || c.Expiry.Before(time.Now()) {
			continue
		}
		all = append(all, found{text, c})
	}
	slices.SortFunc(all, func(a, b found) int { return b.c.IssuedAt.Compare(a.c.IssuedAt) })
	for _, f := range all {
		if _, h, _ := strings.Cut(f.c.Issuer, "@"); h == host {
			return f.text, nil
		}
	}
	if len(all) == 1 {
		return all[0].text, nil
	}
	return "", fmt.Errorf("no token for %s: give -token FILE, set HARRIER_TOKEN, or keep one in %s (harrier token create -token NAME)", host, dir)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// runToken is harrier token create | list | revoke, as HTCondor's
// condor_token_create, condor_token_list and condor_token_revoke: tokens
// are made by the local agent, which knows who asks (its socket's peer
// credentials), and used with --remote from anywhere.
func runToken(args []string, _ io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: create, list or revoke")
	}
	switch args[0] {
	case "create":
		return tokenCreate(args[1:], stdout)
	case "list":
		return tokenList(args[1:], stdout)
	case "revoke":
		return tokenRevoke(args[1:], stdout)
	}
	return usagef("unknown subcommand %q: want create, list or revoke", args[0])
}

// newTokenFlags are the flags of the token commands: those of the tools
// but -remote, since tokens are made, listed and revoked by the local
// agent, which knows who asks; and create's -token names where to keep the
// token, as in condor_token_create.
func newTokenFlags(name string) toolFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var none string
	return toolFlags{fs: fs, pool: fs.String("pool", "", "the pool directory (default $HARRIER_POOL)"), remote: &none, tokenFile: &none}
}

// tokensClient connects to the local agent's Tokens service.
func tokensClient(pool string) (wire.TokensClient, func(), error) {
	pc, err := findPool(pool)
	if err != nil {
		return nil, nil, err
	}
	sock, err := pc.require("AGENT_SOCKET")
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to agent at %s: %w", sock, err)
	}
	return wire.NewTokensClient(conn), func() { conn.Close() }, nil
}

func tokenCreate(args []string, stdout io.Writer) error {
	tf := newTokenFlags("token create")
	identity := tf.fs.String("identity", "", "the user the token acts as (default: you; only root names another)")
	lifetime := tf.fs.Duration("lifetime", 0, "how long the token lasts (default 720h)")
	scope := tf.fs.String("scope", "", "what the token allows, comma separated: read, write (default: all you may do)")
	key := tf.fs.String("key", "", "the signing key (default: the pool's, POOL)")
	name := tf.fs.String("token", "", "keep the token in ~/.harrier/tokens/NAME (and the pool's CA in ~/.harrier/ca.pem) instead of printing it")
	if err := tf.parse(args); err != nil {
		return err
	}
	if tf.fs.NArg() > 0 {
		return usagef("unexpected %q", tf.fs.Arg(0))
	}
	if *lifetime < 0 {
		return usagef("-lifetime %v is negative", *lifetime)
	}
	if strings.ContainsAny(*name, "/\x00") || *name == "." || *name == ".." {
		return usagef("-token %q: want a plain file name", *name)
	}
	var scopes []string
	for _, s := range strings.Split(*scope, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	client, closeFn, err := tokensClient(*tf.pool)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.Create(ctx, &wire.CreateTokenRequest{Identity: *identity, LifetimeSeconds: int64(lifetime.Seconds()), Scopes: scopes, Key: *key})
	if err != nil {
		return rpcError("create a token", err)
	}
	if *name == "" {
		fmt.Fprintln(stdout, reply.Token)
		return nil
	}
	dir, err := userDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tokens"), 0o700); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	path := filepath.Join(dir, "tokens", *name)
	if err := atomicfile.Write(path, []byte(reply.Token+"\n"), 0o600); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	if len(reply.CaPem) > 0 {
		if err := atomicfile.Write(filepath.Join(dir, pki.CACertFile), reply.CaPem, 0o644); err != nil {
			return fmt.Errorf("keep the pool's CA certificate: %w", err)
		}
	}
	fmt.Fprintf(stdout, "Token %s for %s, until %s, kept in %s\n", reply.Info.Id, reply.Info.Subject,
		time.Unix(reply.Info.ExpiresAt, 0).Format(time.RFC3339), path)
	return nil
}

func tokenList(args []string, stdout io.Writer) error {
	tf := newTokenFlags("token list")
	if err := tf.parse(args); err != nil {
		return err
	}
	client, closeFn, err := tokensClient(*tf.pool)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.List(ctx, &wire.ListTokensRequest{})
	if err != nil {
		return rpcError("list tokens", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tISSUER\tISSUED\tEXPIRES\tSCOPES\tREVOKED")
	when := func(t int64) string {
		if t == 0 {
			return "-"
		}
		return time.Unix(t, 0).Format(time.RFC3339)
	}
	for _, t := range reply.Tokens {
		scopes := strings.Join(t.Scopes, ",")
		if scopes == "" {
			scopes = "all"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Id, t.Subject, t.Issuer, when(t.IssuedAt), when(t.ExpiresAt), scopes, when(t.RevokedAt))
	}
	return tw.Flush()
}

func tokenRevoke(args []string, stdout io.Writer) error {
	tf := newTokenFlags("token revoke")
	allOf := tf.fs.String("all-of", "", "revoke every token of this user")
	if err := tf.parse(args); err != nil {
		return err
	}
	req := &wire.RevokeTokenRequest{AllOf: *allOf}
	switch {
	case *allOf == "" && tf.fs.NArg() == 1:
		req.Id = tf.fs.Arg(0)
	case *allOf == "" || tf.fs.NArg() > 0:
		return usagef("want a token id, or -all-of USER")
	}
	client, closeFn, err := tokensClient(*tf.pool)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.Revoke(ctx, req)
	if err != nil {
		return rpcError("revoke", err)
	}
	if len(reply.Ids) == 0 {
		return errors.New("no token matched")
	}
	for _, id := range reply.Ids {
		fmt.Fprintf(stdout, "Token %s revoked\n", id)
	}
	return nil
}

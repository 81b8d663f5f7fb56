package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// agentClient connects a tool to the local agent over its Unix socket. The
// agent identifies the caller by the socket's peer credentials, so no
// secret is needed.
func agentClient(pc *poolConfig) (wire.ScheddClient, func(), error) {
	sock, err := pc.require("AGENT_SOCKET")
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient("unix://"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessage), grpc.MaxCallSendMsgSize(wire.MaxMessage)))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to agent at %s: %w", sock, err)
	}
	return wire.NewScheddClient(conn), func() { conn.Close() }, nil
}

// rpcError strips gRPC's decoration from an error the agent returned.
func rpcError(what string, err error) error {
	if s, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", what, s.Message())
	}
	return fmt.Errorf("%s: %w", what, err)
}

// toolFlags are the flags every user tool shares.
type toolFlags struct {
	fs   *flag.FlagSet
	pool *string
	// remote is the agent's remote API (HOST[:PORT]) to call instead of
	// the local agent, with the token in the file tokenFile.
	remote, tokenFile *string
}

func newToolFlags(name string) toolFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	t := toolFlags{fs: fs, pool: fs.String("pool", "", "the pool directory (default $HARRIER_POOL)"),
		remote:    fs.String("remote", "", "call the agent's remote API at HOST[:PORT] with a token, instead of the local agent"),
		tokenFile: fs.String("token", "", "with -remote: the file holding the token (default $HARRIER_TOKEN, else ~/.harrier/tokens/)"),
	}
	t.refuse("not yet: the daemons' logs are in the pool directory's log/", "debug")
	t.refuse("not yet", "version")
	return t
}

// connect parses args and connects to the pool's agent.
func (t toolFlags) connect(ctx context.Context, args []string) (wire.ScheddClient, func(), error) {
	if err := t.parse(args); err != nil {
		return nil, nil, err
	}
	return t.client(ctx)
}

// client connects to the agent the parsed flags name: the remote API of
// -remote, or the local agent of the pool.
func (t toolFlags) client(context.Context) (wire.ScheddClient, func(), error) {
	if *t.remote != "" {
		return remoteClient(*t.remote, *t.tokenFile)
	}
	pc, err := findPool(*t.pool)
	if err != nil {
		return nil, nil, err
	}
	return agentClient(pc)
}

// me is the user whose jobs the tool shows by default: the remote token's
// user, or the local user; "" for local root, who sees everyone's.
func (t toolFlags) me() (string, error) {
	if *t.remote != "" {
		host, _, err := net.SplitHostPort(*t.remote)
		if err != nil {
			host = *t.remote
		}
		text, err := findToken(*t.tokenFile, host)
		if err != nil {
			return "", err
		}
		c, err := token.Unverified(text)
		if err != nil {
			return "", fmt.Errorf("the token: %w", err)
		}
		return c.Subject, nil
	}
	if os.Geteuid() == 0 {
		return "", nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("who is asking: %w", err)
	}
	return u.Username, nil
}

// parse parses args with options and other arguments in any order, as
// HTCondor's tools take them ("harrier q -af Owner -constraint 'X > 1'");
// the other arguments are t.fs.Args() afterwards. "--" ends the options.
func (t toolFlags) parse(args []string) error {
	var rest, tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	for len(args) > 0 {
		if err := t.fs.Parse(args); err != nil {
			return usagef("%v", err)
		}
		// Parse stopped at an argument that is not an option.
		args = t.fs.Args()
		if len(args) > 0 {
			rest = append(rest, args[0])
			args = args[1:]
		}
	}
	return t.fs.Parse(append(append([]string{"--"}, rest...), tail...))
}

// localAgent says where every tool sends its requests.
const localAgent = "Harrier's tools ask the agent of the pool given by --pool DIR or HARRIER_POOL, or the one given by -remote HOST with a token"

// refusedFlag is an option HTCondor's tool documents that this one does
// not take: it fails, saying why, rather than being taken for a typo or
// ignored.
type refusedFlag struct {
	why     string
	boolean bool
}

func (f refusedFlag) String() string   { return "" }
func (f refusedFlag) Set(string) error { return errors.New(f.why) }
func (f refusedFlag) IsBoolFlag() bool { return f.boolean }

// refuse defines HTCondor options the tool refuses with why; a name ending
// in "=" takes a value.
func (t toolFlags) refuse(why string, names ...string) {
	for _, n := range names {
		name, value := strings.CutSuffix(n, "=")
		t.fs.Var(refusedFlag{why: why, boolean: !value}, name, why)
	}
}

// accept defines HTCondor options that ask for what the tool does anyway.
func (t toolFlags) accept(why string, names ...string) {
	for _, n := range names {
		t.fs.Bool(n, false, "accepted (what the tool does anyway): "+why)
	}
}

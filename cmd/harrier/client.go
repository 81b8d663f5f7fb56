package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

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
}

func newToolFlags(name string) toolFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return toolFlags{fs: fs, pool: fs.String("pool", "", "the pool directory (default $HARRIER_POOL)")}
}

// connect parses args and connects to the pool's agent.
func (t toolFlags) connect(ctx context.Context, args []string) (wire.ScheddClient, func(), error) {
	if err := t.parse(args); err != nil {
		return nil, nil, err
	}
	pc, err := findPool(*t.pool)
	if err != nil {
		return nil, nil, err
	}
	return agentClient(pc)
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

package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/user"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// The remote API is the Schedd service served over TLS to users on other
// hosts, who hold no pool certificate: each call carries a token in its
// "authorization" metadata ("Bearer TOKEN"), and acts as the token's user
// exactly as that user's call on the local socket would.

// TokenMetadata is the metadata key that carries a call's token.
const TokenMetadata = "authorization"

// remoteScopes are the Schedd methods the remote API offers and the scope
// each needs; the others (a shell in a job, reservations) are for the
// submit machine only.
var remoteScopes = map[string]string{
	wire.Schedd_Query_FullMethodName:          token.ScopeRead,
	wire.Schedd_History_FullMethodName:        token.ScopeRead,
	wire.Schedd_QueryPool_FullMethodName:      token.ScopeRead,
	wire.Schedd_NewCluster_FullMethodName:     token.ScopeWrite,
	wire.Schedd_Submit_FullMethodName:         token.ScopeWrite,
	wire.Schedd_SubmitClusters_FullMethodName: token.ScopeWrite,
	wire.Schedd_Act_FullMethodName:            token.ScopeWrite,
	wire.Schedd_Edit_FullMethodName:           token.ScopeWrite,
}

// tokenCallerKey is the context key of a remote call's verified token.
type tokenCallerKey struct{}

// ServeRemote serves the remote API on lis with TLS configuration cfg (the
// agent's certificate; clients present none) until ctx is done. The agent
// must have Tokens.
func (a *Agent) ServeRemote(ctx context.Context, lis net.Listener, cfg *tls.Config) error {
	if a.cfg.Tokens == nil {
		return errors.New("agent: remote API: no token signing key")
	}
	srv := grpc.NewServer(append(a.rpc.ServerOptions(),
		grpc.Creds(credentials.NewTLS(cfg)),
		grpc.MaxRecvMsgSize(a.cfg.Limits.recvLimit()),
		grpc.MaxSendMsgSize(wire.MaxMessage),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, err := a.authenticate(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, err := a.authenticate(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			return h(srv, tokenStream{ServerStream: ss, ctx: ctx})
		}),
		grpc.WaitForHandlers(true))...)
	wire.RegisterScheddServer(srv, &scheddService{a: a})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("agent: remote API: %w", err)
	}
}

// authenticate checks a remote call's token and scope, and returns ctx
// carrying the token's claims for callerFrom. Every call is checked
// afresh, revocation included.
func (a *Agent) authenticate(ctx context.Context, method string) (context.Context, error) {
	scope, ok := remoteScopes[method]
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "%s is not offered by the remote API: use it on the submit machine", method)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(TokenMetadata)
	if len(vals) != 1 {
		return nil, status.Error(codes.Unauthenticated, "no token: a remote call carries one token (authorization: Bearer TOKEN)")
	}
	text, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "the authorization is not \"Bearer TOKEN\"")
	}
	t := a.cfg.Tokens
	c, err := t.Key.Verify(text, a.cfg.Name, time.Now())
	if err == nil {
		err = t.Registry.Check(c)
	}
	if err != nil {
		a.log.Info("remote call refused", "method", method, "err", err)
		return nil, status.Errorf(codes.Unauthenticated, "token refused: %v", err)
	}
	if c.Subject == "root" {
		return nil, status.Error(codes.PermissionDenied, "token refused: root acts on the pool's own hosts only")
	}
	if !c.Allows(scope) {
		return nil, status.Errorf(codes.PermissionDenied, "%v: token %s allows %s, and %s needs %s", token.ErrScope, c.ID, strings.Join(c.Scopes, ","), method, scope)
	}
	u, err := user.Lookup(c.Subject)
	if err != nil {
		return nil, status.Errorf(codes.PermissionDenied, "token refused: no user %s on this submit machine", c.Subject)
	}
	if scope == token.ScopeWrite {
		// A remote user's submissions are paced as theirs on the socket.
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		if err := a.allowSubmission(uint32(uid), method, false); err != nil {
			return nil, err
		}
	}
	return context.WithValue(ctx, tokenCallerKey{}, c), nil
}

// tokenStream is a server stream whose context carries the caller's token.
type tokenStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s tokenStream) Context() context.Context { return s.ctx }

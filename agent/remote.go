package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"harrier.dev/harrier/pki"
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

// ServeRemote serves the remote API until ctx is done: gRPC on lis, and
// its JSON form over HTTPS on jsonLis (grpc-gateway: POST
// /harrier.v1.Schedd/METHOD with the request as JSON, the token in an
// "Authorization: Bearer TOKEN" header; see docs/remote-api.md), both
// with TLS configuration cfg (the agent's certificate; clients present
// none). Either listener may be nil. The agent must have Tokens.
func (a *Agent) ServeRemote(ctx context.Context, lis, jsonLis net.Listener, cfg *tls.Config) error {
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

	errc := make(chan error, 3)
	servers := 0
	if lis != nil {
		servers++
		go func() { errc <- srv.Serve(lis) }()
	}
	var web *http.Server
	if jsonLis != nil {
		// The gateway calls the same server over an in-process link, so
		// that a JSON call is checked and served exactly as a gRPC one.
		link := bufconn.Listen(1 << 20)
		servers++
		go func() { errc <- srv.Serve(link) }()
		mux, closeMux, err := a.jsonGateway(ctx, link)
		if err != nil {
			srv.Stop()
			return err
		}
		defer closeMux()
		web = &http.Server{Handler: mux, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
		servers++
		go func() { errc <- web.ServeTLS(jsonLis, "", "") }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("agent: remote API: %w", err)
		servers--
	}
	if web != nil {
		_ = web.Close()
	}
	srv.Stop()
	for range servers {
		<-errc
	}
	return err
}

// jsonGateway returns grpc-gateway's handler of the Schedd service's JSON
// form, calling the remote API's server through link.
func (a *Agent) jsonGateway(ctx context.Context, link *bufconn.Listener) (http.Handler, func(), error) {
	tlsCfg, err := pki.UserClientConfig(a.cfg.CAPEM, pki.RoleAgent)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: JSON API: %w", err)
	}
	conn, err := grpc.NewClient("passthrough:///agent",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return link.DialContext(ctx) }),
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessage), grpc.MaxCallSendMsgSize(wire.MaxMessage)))
	if err != nil {
		return nil, nil, fmt.Errorf("agent: JSON API: %w", err)
	}
	mux := runtime.NewServeMux()
	if err := wire.RegisterScheddHandler(ctx, mux, conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("agent: JSON API: %w", err)
	}
	return mux, func() { conn.Close() }, nil
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

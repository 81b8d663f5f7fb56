package agent

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// DefaultTokenLifetime is how long a token lasts when its creator names no
// lifetime.
const DefaultTokenLifetime = 30 * 24 * time.Hour

// maxTokensPerUser bounds the live tokens a user makes for themself, so
// that no user grows the registry, which is written whole at each change,
// without end; root makes tokens for anyone without this limit.
const maxTokensPerUser = 100

// Tokens is what the agent issues and checks user tokens with.
type Tokens struct {
	// Key signs and verifies the tokens; only root reads its file.
	Key *token.Key
	// Registry records the tokens issued and revoked.
	Registry *token.Registry
}

// tokensService issues, lists and revokes tokens on the local socket,
// where the kernel names the caller.
type tokensService struct {
	wire.UnimplementedTokensServer
	a *Agent
}

// tokens returns the agent's tokens, or an error saying it has none.
func (s *tokensService) tokens() (*Tokens, error) {
	if t := s.a.cfg.Tokens; t != nil {
		return t, nil
	}
	return nil, status.Error(codes.Unavailable, "this agent issues no tokens (it has no token signing key)")
}

// Create signs a token for the caller, or, for root, for any user but
// root: a token of root's would make whoever holds it the pool's
// administrator from anywhere.
func (s *tokensService) Create(ctx context.Context, req *wire.CreateTokenRequest) (*wire.CreateTokenReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.tokens()
	if err != nil {
		return nil, err
	}
	subject := req.Identity
	if subject == "" {
		subject = who.name
	}
	switch {
	case subject != who.name && !who.root:
		return nil, status.Errorf(codes.PermissionDenied, "%s may create tokens for themself only, not for %s: only the pool administrator creates tokens for others", who.name, subject)
	case subject == "root":
		return nil, status.Error(codes.PermissionDenied, "no token is made for root: administer the pool on its own hosts")
	case req.Key != "" && req.Key != t.Key.Name:
		return nil, status.Errorf(codes.InvalidArgument, "no signing key %q: this agent signs with %q", req.Key, t.Key.Name)
	case req.LifetimeSeconds < 0:
		return nil, status.Errorf(codes.InvalidArgument, "lifetime %ds is negative", req.LifetimeSeconds)
	}
	if _, err := user.Lookup(subject); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "no user %s on this submit machine: %v", subject, err)
	}
	if err := token.CheckScopes(req.Scopes); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	lifetime := DefaultTokenLifetime
	if req.LifetimeSeconds > 0 {
		lifetime = time.Duration(req.LifetimeSeconds) * time.Second
	}
	id, err := token.NewID()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	now := time.Now().Truncate(time.Second)
	c := token.Claims{ID: id, Subject: subject, Issuer: s.a.cfg.Name, IssuedAt: now, Expiry: now.Add(lifetime), Scopes: req.Scopes}
	text, err := t.Key.Sign(c)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// Recorded before it is handed out: a token the registry does not
	// know is refused.
	limit := maxTokensPerUser
	if who.root {
		limit = 0
	}
	if err := t.Registry.Add(c, limit); err != nil {
		if errors.Is(err, token.ErrTooMany) {
			return nil, status.Error(codes.ResourceExhausted, err.Error())
		}
		return nil, status.Errorf(codes.Internal, "record the token: %v", err)
	}
	s.a.log.Info("token created", "id", id, "subject", subject, "by", who.name, "expires", c.Expiry, "scopes", c.Scopes)
	return &wire.CreateTokenReply{Token: text, Info: tokenInfo(token.Record{Claims: c}), CaPem: s.a.cfg.CAPEM}, nil
}

// List returns the caller's tokens; root's list has everyone's.
func (s *tokensService) List(ctx context.Context, _ *wire.ListTokensRequest) (*wire.ListTokensReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.tokens()
	if err != nil {
		return nil, err
	}
	subject := who.name
	if who.root {
		subject = ""
	}
	reply := &wire.ListTokensReply{}
	for _, r := range t.Registry.List(subject) {
		reply.Tokens = append(reply.Tokens, tokenInfo(r))
	}
	return reply, nil
}

// Revoke revokes a token of the caller's (root: anyone's), or all of a
// user's. From the reply on, every call with them is refused.
func (s *tokensService) Revoke(ctx context.Context, req *wire.RevokeTokenRequest) (*wire.RevokeTokenReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.tokens()
	if err != nil {
		return nil, err
	}
	if (req.Id == "") == (req.AllOf == "") {
		return nil, status.Error(codes.InvalidArgument, "name a token id or a user whose tokens to revoke")
	}
	if req.AllOf != "" && !who.mayEdit(req.AllOf) {
		return nil, status.Errorf(codes.PermissionDenied, "%s may not revoke %s's tokens: only they or the administrator may", who.name, req.AllOf)
	}
	ids, err := t.Registry.Revoke(req.Id, req.AllOf, who.mayEdit, time.Now())
	if err != nil {
		code := codes.Internal
		switch {
		case errors.Is(err, token.ErrNoToken):
			code = codes.NotFound
		case errors.Is(err, token.ErrNotYours):
			code = codes.PermissionDenied
		}
		return nil, status.Error(code, fmt.Sprintf("revoke: %v", err))
	}
	s.a.log.Info("tokens revoked", "ids", ids, "by", who.name)
	return &wire.RevokeTokenReply{Ids: ids}, nil
}

func tokenInfo(r token.Record) *wire.TokenInfo {
	info := &wire.TokenInfo{Id: r.ID, Subject: r.Subject, Issuer: r.Issuer,
		IssuedAt: r.IssuedAt.Unix(), ExpiresAt: r.Expiry.Unix(), Scopes: r.Scopes}
	if !r.Revoked.IsZero() {
		info.RevokedAt = r.Revoked.Unix()
	}
	return info
}

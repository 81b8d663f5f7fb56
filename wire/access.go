package wire

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/pki"
)

// Access is who may call what over the pool's mutual TLS: for each method
// (or each method of a service, "/pkg.Service/*"), the roles whose
// certificates may call it. Every server made with ServerOptions enforces
// it before a handler runs; a method it does not name is refused, so a new
// RPC is closed until it is given a line here. Handlers then check what
// depends on the request (a claim belongs to the agent that made it, an ad
// to the daemon that advertised it, a job's shadow answers only the starter
// holding that job's secret); docs/security.md has the whole table.
var Access = map[string][]pki.Role{
	// The collector: startds advertise machines, agents their submitters
	// and jobs (the endpoint checks the ad type against the role); any
	// daemon of the pool may query it.
	Collector_Advertise_FullMethodName:     {pki.RoleStartd, pki.RoleAgent},
	Collector_Invalidate_FullMethodName:    {pki.RoleStartd, pki.RoleAgent},
	Collector_AdvertiseJobs_FullMethodName: {pki.RoleAgent},
	Collector_Query_FullMethodName:         {pki.RoleMatchmaker, pki.RoleAgent, pki.RoleStartd},
	// Only the negotiator tells of matches.
	Agent_Matched_FullMethodName:  {pki.RoleMatchmaker},
	Startd_Matched_FullMethodName: {pki.RoleMatchmaker},
	// Only agents claim machines, and only the claiming agent uses a claim.
	Startd_RequestClaim_FullMethodName:  {pki.RoleAgent},
	Startd_ActivateClaim_FullMethodName: {pki.RoleAgent},
	Startd_ReleaseClaim_FullMethodName:  {pki.RoleAgent},
	Startd_KeepAlive_FullMethodName:     {pki.RoleAgent},
	// The matchmaker vacates what a reservation's window keeps off a slot.
	Startd_Vacate_FullMethodName: {pki.RoleMatchmaker},
	// Agents reserve on behalf of their users; the administrator for anyone.
	"/harrier.v1.Reservations/*": {pki.RoleAgent, pki.RoleAdmin},
	// A shadow is reached by starters only, each proving with its job's
	// secret which job it runs.
	"/harrier.v1.Shadow/*":   {pki.RoleStartd},
	"/harrier.v1.ShadowIO/*": {pki.RoleStartd},
	// The administrator's services are the administrator's alone.
	"/harrier.v1.MatchmakerAdmin/*": {pki.RoleAdmin},
	// A master serves the administrator here too (and on a root-only
	// Unix socket), for administrators on other hosts.
	"/harrier.v1.MasterAdmin/*": {pki.RoleAdmin},
}

// A Peer is the verified caller of an RPC.
type Peer struct {
	// Identity is the common name of the caller's certificate
	// ("startd@host2"), and Role its role.
	Identity string
	Role     pki.Role
}

type peerKey struct{}

// PeerOf returns the verified caller that the access check put in ctx.
func PeerOf(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// WithPeer returns ctx carrying p, as a server's access check leaves it;
// for tests of handlers that are called directly.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// rolesFor returns the roles that may call method.
func rolesFor(method string) ([]pki.Role, bool) {
	if r, ok := Access[method]; ok {
		return r, true
	}
	if i := strings.LastIndexByte(method, '/'); i > 0 {
		r, ok := Access[method[:i+1]+"*"]
		return r, ok
	}
	return nil, false
}

// authorize identifies the caller of method and checks Access.
func authorize(ctx context.Context, method string) (context.Context, error) {
	p, err := callerOf(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unauthenticated, "%s: %v", method, err)
	}
	roles, ok := rolesFor(method)
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "%s: no such method is open to anyone", method)
	}
	for _, r := range roles {
		if p.Role == r {
			return WithPeer(ctx, p), nil
		}
	}
	return nil, status.Errorf(codes.PermissionDenied, "%s: %s may not call it", method, p.Identity)
}

// callerOf reads the verified identity of the connection's peer.
func callerOf(ctx context.Context) (Peer, error) {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return Peer{}, errors.New("no peer")
	}
	info, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return Peer{}, errors.New("not a TLS connection")
	}
	id, err := pki.Identity(info.State)
	if err != nil {
		return Peer{}, err
	}
	return Peer{Identity: id, Role: pki.RoleOf(id)}, nil
}

func unaryAccess(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func streamAccess(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, peerStream{ServerStream: ss, ctx: ctx})
}

// peerStream is a server stream whose context carries the caller.
type peerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s peerStream) Context() context.Context { return s.ctx }

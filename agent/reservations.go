package agent

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// The local users' advance reservations go to the matchmaker's
// Reservations service under the agent's certificate, naming the caller
// as the kernel identified them: a user reserves for, and cancels, no one
// but themselves. The pool administrator acts for others with the admin
// certificate, straight to the matchmaker.

// reservations returns a client of the matchmaker's Reservations service.
func (s *scheddService) reservations() (wire.ReservationsClient, error) {
	cc, err := s.a.client.conn(s.a.cfg.MatchmakerAddr, pki.RoleMatchmaker)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return wire.NewReservationsClient(cc), nil
}

func (s *scheddService) Reserve(ctx context.Context, req *wire.ReserveRequest) (*wire.ReserveReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if req.Owner == "" {
		req.Owner = who.name
	}
	if req.Owner != who.name {
		return nil, status.Errorf(codes.PermissionDenied, "reserve: %s may not reserve for %s: only the pool administrator may", who.name, req.Owner)
	}
	client, err := s.reservations()
	if err != nil {
		return nil, err
	}
	req.Requester = who.name
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	return client.Reserve(cctx, req)
}

func (s *scheddService) ListReservations(ctx context.Context, req *wire.ListReservationsRequest) (*wire.ListReservationsReply, error) {
	if _, err := callerFrom(ctx); err != nil {
		return nil, err
	}
	client, err := s.reservations()
	if err != nil {
		return nil, err
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	return client.ListReservations(cctx, req)
}

func (s *scheddService) CancelReservation(ctx context.Context, req *wire.CancelReservationRequest) (*wire.CancelReservationReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	client, err := s.reservations()
	if err != nil {
		return nil, err
	}
	req.Requester = who.name
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	return client.CancelReservation(cctx, req)
}

package matchmaker

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// adminEndpoint serves the pool administrator (wire.Access lets no other
// role call it): changes to the accountant's records.
type adminEndpoint struct {
	wire.UnimplementedMatchmakerAdminServer
	accountant *Accountant // nil when priorities come from elsewhere
	kick       func()
}

func (e *adminEndpoint) SetPriorityFactor(_ context.Context, req *wire.SetPriorityFactorRequest) (*wire.AdminReply, error) {
	if e.accountant == nil {
		return nil, status.Error(codes.FailedPrecondition, "set priority factor: this matchmaker keeps no user priorities")
	}
	if req.User == "" {
		return nil, status.Error(codes.InvalidArgument, "set priority factor: no user")
	}
	if err := e.accountant.SetFactor(req.User, req.Factor); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set priority factor: %v", err)
	}
	e.kick() // the next cycle publishes it
	return &wire.AdminReply{}, nil
}

func (e *adminEndpoint) ResetUsage(_ context.Context, req *wire.ResetUsageRequest) (*wire.AdminReply, error) {
	if e.accountant == nil {
		return nil, status.Error(codes.FailedPrecondition, "reset usage: this matchmaker keeps no user priorities")
	}
	if err := e.accountant.ResetUsage(req.User); err != nil {
		return nil, status.Errorf(codes.NotFound, "%v", err)
	}
	e.kick()
	return &wire.AdminReply{}, nil
}

package master

import (
	"context"
	"errors"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// AdminEndpoint returns the MasterAdmin service of m, for a gRPC server
// that admits only the pool administrator: a Unix socket only root may
// open (with peercred.AdministratorOnly), or the pool's TLS, where
// wire.Access admits only the admin role. reload reads the configuration
// afresh for Reconfig.
func (m *Master) AdminEndpoint(reload func() (Config, error)) wire.MasterAdminServer {
	return &adminEndpoint{m: m, reload: reload, started: time.Now()}
}

// adminEndpoint serves the administrator.
type adminEndpoint struct {
	wire.UnimplementedMasterAdminServer
	m       *Master
	reload  func() (Config, error)
	started time.Time
}

func (e *adminEndpoint) Reconfig(ctx context.Context, _ *wire.ReconfigRequest) (*wire.AdminReply, error) {
	cfg, err := e.reload()
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "reconfig: %v", err)
	}
	if err := e.m.Reconfigure(ctx, cfg); err != nil {
		return nil, controlError("reconfig", err)
	}
	return &wire.AdminReply{}, nil
}

func (e *adminEndpoint) Off(ctx context.Context, req *wire.DaemonControlRequest) (*wire.DaemonControlReply, error) {
	names, err := e.m.Off(ctx, req.Daemon)
	if err != nil {
		return nil, controlError("off", err)
	}
	return &wire.DaemonControlReply{Daemons: names}, nil
}

func (e *adminEndpoint) On(ctx context.Context, req *wire.DaemonControlRequest) (*wire.DaemonControlReply, error) {
	names, err := e.m.On(ctx, req.Daemon)
	if err != nil {
		return nil, controlError("on", err)
	}
	return &wire.DaemonControlReply{Daemons: names}, nil
}

func (e *adminEndpoint) Restart(ctx context.Context, req *wire.DaemonControlRequest) (*wire.DaemonControlReply, error) {
	names, err := e.m.Restart(ctx, req.Daemon)
	if err != nil {
		return nil, controlError("restart", err)
	}
	return &wire.DaemonControlReply{Daemons: names}, nil
}

func (e *adminEndpoint) Daemons(ctx context.Context, _ *wire.DaemonsRequest) (*wire.DaemonsReply, error) {
	st, err := e.m.Status(ctx)
	if err != nil {
		return nil, controlError("daemons", err)
	}
	reply := &wire.DaemonsReply{Host: e.m.cfg.Host, MasterPid: int32(os.Getpid()), MasterStartUnix: e.started.Unix()}
	for _, d := range st {
		info := &wire.DaemonInfo{Name: d.Name, Pid: int32(d.Pid), Restarts: int32(d.Restarts), Off: d.Off}
		if !d.Started.IsZero() {
			info.StartUnix = d.Started.Unix()
		}
		reply.Daemons = append(reply.Daemons, info)
	}
	return reply, nil
}

// controlError gives a request's failure its gRPC code.
func controlError(what string, err error) error {
	switch {
	case errors.Is(err, ErrNoDaemon):
		return status.Errorf(codes.NotFound, "%s: %v", what, err)
	case errors.Is(err, ErrStopped):
		return status.Errorf(codes.Unavailable, "%s: %v", what, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

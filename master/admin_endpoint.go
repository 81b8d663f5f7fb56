package master

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/wire"
)

// ServeAdmin serves the MasterAdmin service on lis, a Unix socket, until
// ctx is done. Only root, or the user the master runs as, may call it:
// the kernel's peer credentials say who connected. reload reads the
// configuration afresh for Reconfig.
func (m *Master) ServeAdmin(ctx context.Context, lis net.Listener, reload func() (Config, error)) error {
	srv := grpc.NewServer(grpc.Creds(peercred.Credentials()), grpc.UnaryInterceptor(peercred.AdministratorOnly))
	wire.RegisterMasterAdminServer(srv, &adminEndpoint{m: m, reload: reload, started: time.Now()})
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("master: serve the administrator: %w", err)
	}
	return nil
}

// adminEndpoint serves the administrator on the master's socket.
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

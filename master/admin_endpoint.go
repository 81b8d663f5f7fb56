package master

import (
	"context"
	"errors"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
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
	mode, ok := map[wire.StopMode]StopMode{
		wire.StopMode_STOP_MODE_GRACEFUL: Graceful, wire.StopMode_STOP_MODE_PEACEFUL: Peaceful, wire.StopMode_STOP_MODE_FAST: Fast,
	}[req.Mode]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "off: unknown mode %v", req.Mode)
	}
	names, stopping, err := e.m.Off(ctx, req.Daemon, mode)
	if err != nil {
		return nil, controlError("off", err)
	}
	return &wire.DaemonControlReply{Daemons: names, Stopping: stopping}, nil
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

func (e *adminEndpoint) DaemonConfig(ctx context.Context, req *wire.DaemonConfigRequest) (*wire.ConfigReply, error) {
	if req.Daemon == "" {
		return nil, status.Error(codes.InvalidArgument, "daemon config: which daemon?")
	}
	ds, err := e.m.configured(ctx, req.Daemon)
	if err != nil {
		return nil, controlError("daemon config", err)
	}
	var reply *wire.ConfigReply
	e.awaitSocket(ctx, ds[0])
	err = callDaemon(ctx, ds[0], func(ctx context.Context, c wire.DaemonAdminClient) error {
		var err error
		reply, err = c.Config(ctx, req.Request)
		return err
	})
	return reply, err
}

func (e *adminEndpoint) Drain(ctx context.Context, req *wire.DaemonDrainRequest) (*wire.DaemonDrainReply, error) {
	ds, err := e.m.configured(ctx, req.Daemon)
	if err != nil {
		return nil, controlError("drain", err)
	}
	reply := &wire.DaemonDrainReply{}
	for _, d := range ds {
		e.awaitSocket(ctx, d)
		err := callDaemon(ctx, d, func(ctx context.Context, c wire.DaemonAdminClient) error {
			r, err := c.Drain(ctx, req.Request)
			if err == nil {
				reply.Daemons = append(reply.Daemons, d.Name)
				reply.Vacated = append(reply.Vacated, r.Vacated...)
				reply.Retiring = append(reply.Retiring, r.Retiring...)
			}
			return err
		})
		// Asked for every daemon: those that do not drain are skipped.
		if req.Daemon == "" && status.Code(err) == codes.Unimplemented {
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	if len(reply.Daemons) == 0 {
		return nil, status.Error(codes.NotFound, "drain: no daemon of this master drains")
	}
	return reply, nil
}

// socketWait bounds how long a request waits for the administrator's
// socket of a daemon that is running but has not made it yet.
const socketWait = 10 * time.Second

// awaitSocket waits while d runs without its administrator's socket yet:
// a daemon just turned on (harrier on, restart) makes it a moment after
// it starts, and a request made at once should reach it rather than fail.
// A daemon that is off or between restarts is not waited for.
func (e *adminEndpoint) awaitSocket(ctx context.Context, d Daemon) {
	if d.AdminSocket == "" {
		return
	}
	deadline := time.Now().Add(socketWait)
	for {
		if _, err := os.Stat(d.AdminSocket); err == nil || time.Now().After(deadline) {
			return
		}
		st, err := e.m.Status(ctx)
		if err != nil {
			return
		}
		running := false
		for _, s := range st {
			running = running || (s.Name == d.Name && s.Pid != 0 && !s.Off)
		}
		if !running {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// callDaemon calls f with a client of d's administrator socket; its
// errors come back as they are, with their codes.
func callDaemon(ctx context.Context, d Daemon, f func(context.Context, wire.DaemonAdminClient) error) error {
	if d.AdminSocket == "" {
		return status.Errorf(codes.Unimplemented, "%s serves no administrator", d.Name)
	}
	conn, err := grpc.NewClient("unix://"+d.AdminSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return status.Errorf(codes.Unavailable, "connect to %s: %v", d.Name, err)
	}
	defer conn.Close()
	return f(ctx, wire.NewDaemonAdminClient(conn))
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

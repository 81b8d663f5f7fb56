package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/wire"
)

// daemonAdminSocket is where daemon name serves the administrator.
func daemonAdminSocket(runDir, name string) string {
	return filepath.Join(runDir, name+".admin.sock")
}

// localAdminServer is a gRPC server for a root-only Unix socket: the
// kernel's peer credentials say who connected, and only root (or the
// server's own user) is served.
func localAdminServer() *grpc.Server {
	return grpc.NewServer(grpc.Creds(peercred.Credentials()), grpc.UnaryInterceptor(peercred.AdministratorOnly))
}

// daemonAdminEndpoint answers the administrator (in practice, the
// daemon's master) on a daemon's socket, describing the configuration
// current holds: the one the daemon runs on.
type daemonAdminEndpoint struct {
	wire.UnimplementedDaemonAdminServer
	current *atomic.Pointer[poolConfig]

	mu      sync.Mutex
	drainer drainer // guarded by mu; nil until a startd serves
}

// drainer is a daemon that can take its machine out of service: the
// startd.
type drainer interface {
	Drain(quick bool) []string
	CancelDrain()
}

// setDrainer makes Drain requests reach d.
func (e *daemonAdminEndpoint) setDrainer(d drainer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainer = d
}

func (e *daemonAdminEndpoint) Drain(_ context.Context, req *wire.DrainRequest) (*wire.DrainReply, error) {
	e.mu.Lock()
	d := e.drainer
	e.mu.Unlock()
	if d == nil {
		return nil, status.Error(codes.Unimplemented, "drain: only a startd drains")
	}
	if req.Cancel {
		d.CancelDrain()
		return &wire.DrainReply{}, nil
	}
	return &wire.DrainReply{Vacated: d.Drain(req.Quick)}, nil
}

func (e *daemonAdminEndpoint) Config(_ context.Context, req *wire.ConfigRequest) (*wire.ConfigReply, error) {
	c := e.current.Load().c
	var settings []config.Setting
	if len(req.Keys) == 0 {
		settings = c.Used()
	}
	for _, k := range req.Keys {
		settings = append(settings, c.Setting(k))
	}
	reply := &wire.ConfigReply{}
	for _, s := range settings {
		reply.Settings = append(reply.Settings, settingToWire(s))
	}
	return reply, nil
}

func settingToWire(s config.Setting) *wire.ConfigSetting {
	w := &wire.ConfigSetting{Key: s.Key, Value: s.Value, Defined: s.Defined, Origin: s.Origin, HasDefault: s.HasDefault, Default: s.Default}
	if strings.EqualFold(s.Key, "QUEUE_DSN") || strings.EqualFold(s.Key, "ACCOUNTANT_DSN") {
		w.Value, w.Default = redactDSN(w.Value), redactDSN(w.Default)
	}
	if s.Err != nil {
		w.Error = s.Err.Error()
	}
	return w
}

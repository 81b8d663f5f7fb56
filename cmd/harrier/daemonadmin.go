package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/startd"
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
// the daemon runs on.
type daemonAdminEndpoint struct {
	wire.UnimplementedDaemonAdminServer
	running *atomic.Pointer[runningConfig]

	mu      sync.Mutex
	drainer drainer // guarded by mu; nil until a startd serves
}

// drainer is a daemon that can take its machine out of service: the
// startd.
type drainer interface {
	Drain(startd.DrainRequest) (startd.DrainResult, error)
	CancelDrain() error
	StopPeacefully()
}

// setDrainer makes Drain requests reach d.
func (e *daemonAdminEndpoint) setDrainer(d drainer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainer = d
}

// drainerOf returns the startd, or the error for a daemon that is none
// (what, for the error).
func (e *daemonAdminEndpoint) drainerOf(what string) (drainer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.drainer == nil {
		return nil, status.Errorf(codes.Unimplemented, "%s: only a startd does this", what)
	}
	return e.drainer, nil
}

func (e *daemonAdminEndpoint) StopPeacefully(context.Context, *wire.StopPeacefullyRequest) (*wire.StopPeacefullyReply, error) {
	d, err := e.drainerOf("stop peacefully")
	if err != nil {
		return nil, err
	}
	d.StopPeacefully()
	return &wire.StopPeacefullyReply{}, nil
}

func (e *daemonAdminEndpoint) Drain(_ context.Context, req *wire.DrainRequest) (*wire.DrainReply, error) {
	d, err := e.drainerOf("drain")
	if err != nil {
		return nil, err
	}
	if req.Cancel {
		if err := d.CancelDrain(); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &wire.DrainReply{}, nil
	}
	sched := startd.Migrate
	switch {
	case req.Fast:
		sched = startd.Fast
	case req.Quick:
		sched = startd.Quick
	case req.Graceful:
		sched = startd.Graceful
	}
	r, err := d.Drain(startd.DrainRequest{Schedule: sched, Reason: req.Reason, Start: req.Start, Check: req.Check,
		ResumeOnCompletion: req.ResumeOnCompletion})
	if errors.Is(err, startd.ErrDrainRefused) {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &wire.DrainReply{Vacated: r.Vacated, Retiring: r.Retiring}, nil
}

// Config describes the settings the daemon runs on; one that changed in
// the file but waits for a restart is described as the daemon started
// with it, and as the file has it now (Next).
func (e *daemonAdminEndpoint) Config(_ context.Context, req *wire.ConfigRequest) (*wire.ConfigReply, error) {
	r := e.running.Load()
	var settings []config.Setting
	if len(req.Keys) == 0 {
		settings = r.pc.c.Used()
	}
	for _, k := range req.Keys {
		settings = append(settings, r.pc.c.Setting(k))
	}
	reply := &wire.ConfigReply{}
	for _, s := range settings {
		w := settingToWire(s)
		if r.restarting(s.Key) {
			w = settingToWire(r.started.c.Setting(s.Key))
			w.Next = settingToWire(s)
		}
		reply.Settings = append(reply.Settings, w)
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

// serveDaemonAdmin serves the DaemonAdmin service on lis until ctx is
// done, describing the configuration current holds: the one the daemon
// runs on.
func serveDaemonAdmin(ctx context.Context, lis net.Listener, e *daemonAdminEndpoint) error {
	srv := grpc.NewServer(grpc.Creds(peercred.Credentials()), grpc.UnaryInterceptor(peercred.AdministratorOnly))
	wire.RegisterDaemonAdminServer(srv, e)
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve the administrator: %w", err)
	}
	return nil
}

// daemonAdminEndpoint answers the administrator on a daemon's socket.
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
	if s.Err != nil {
		w.Error = s.Err.Error()
	}
	return w
}

// runConfigVal prints configuration values, as condor_config_val does:
// those of the pool's configuration file, or with -daemon NAME those the
// daemon runs on (including its defaults), asked through its master (of
// -host HOST, or of this host). -verbose adds where each value
// comes from; -dump prints every key (with -daemon: every key the daemon
// has looked up).
func runConfigVal(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("config-val")
	daemon := tf.fs.String("daemon", "", "ask the daemon NAME (matchmaker, agent, or a startd's name) what it uses")
	host := tf.fs.String("host", "", "with -daemon: the host whose master runs it (default: this host)")
	verbose := tf.fs.Bool("verbose", false, "say where each value comes from")
	dump := tf.fs.Bool("dump", false, "print every key")
	if err := tf.parse(args); err != nil {
		return err
	}
	keys := tf.fs.Args()
	if *dump == (len(keys) > 0) {
		return usagef("give KEY... or -dump")
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	var settings []*wire.ConfigSetting
	if *daemon == "" {
		if *dump {
			keys = pc.c.Keys()
		}
		for _, k := range keys {
			settings = append(settings, settingToWire(pc.c.Setting(k)))
		}
	} else if settings, err = daemonConfig(pc, *host, *daemon, keys); err != nil {
		return err
	}
	missing := 0
	for _, s := range settings {
		switch {
		case s.Error != "":
			fmt.Fprintf(stdout, "%s: %s\n", s.Key, s.Error)
			missing++
			continue
		case !s.Defined && !s.HasDefault && !*dump:
			fmt.Fprintf(stdout, "Not defined: %s\n", s.Key)
			missing++
			continue
		case *dump || *verbose:
			// A key a daemon looked up that is not defined is dumped
			// empty, which is what the daemon got.
			fmt.Fprintln(stdout, strings.TrimSpace(s.Key+" = "+s.Value))
		default:
			fmt.Fprintln(stdout, s.Value)
		}
		if *verbose {
			switch {
			case s.Defined:
				fmt.Fprintf(stdout, " # at %s\n", s.Origin)
			case s.HasDefault:
				fmt.Fprintf(stdout, " # not defined: the daemon's default\n")
			default:
				fmt.Fprintf(stdout, " # not defined\n")
			}
		}
	}
	if missing > 0 {
		return exitError(1)
	}
	return nil
}

// daemonConfig asks daemon name, through its master (that of host, or
// whichever of this host's masters runs it), to describe keys (every key
// it uses if none).
func daemonConfig(pc *poolConfig, host, name string, keys []string) ([]*wire.ConfigSetting, error) {
	var settings []*wire.ConfigSetting
	found := false
	err := eachMaster(pc, host, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		reply, err := c.DaemonConfig(ctx, &wire.DaemonConfigRequest{Daemon: name, Request: &wire.ConfigRequest{Keys: keys}})
		if status.Code(err) == codes.NotFound && host == "" {
			return nil // another master's daemon
		}
		if err != nil {
			return err
		}
		settings, found = reply.Settings, true
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("no master of this host runs %q", name)
	}
	return settings, err
}

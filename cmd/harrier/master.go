package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/master"
	"harrier.dev/harrier/metrics"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// runMaster runs a host's master (see package master) in the foreground
// until SIGTERM or SIGINT: it keeps the daemons of DAEMON_LIST (or
// --daemons) running and stops them when it stops. Under systemd
// (Type=notify) it says it is ready once the daemons are started.
func runMaster(args []string, _ io.Reader, _ io.Writer) error {
	fs := flag.NewFlagSet("master", flag.ContinueOnError)
	configPath := fs.String("config", "", "the pool's configuration file")
	name := fs.String("name", "", "this host's name, which its startd advertises (default: the host name)")
	list := fs.String("daemons", "", "the daemons to run, as DAEMON_LIST (default: DAEMON_LIST)")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if *configPath == "" {
		return usagef("--config is required")
	}
	configAbs, err := filepath.Abs(*configPath)
	if err != nil {
		return err
	}
	pc, err := loadPoolConfig(configAbs)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(pc)})).With("daemon", "master")
	cfg, err := masterConfig(pc, configAbs, *name, *list, logger)
	if err != nil {
		return err
	}
	m, err := master.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Caught from here on: SIGHUP's default would end the master.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := func() (master.Config, error) {
		pc, err := loadPoolConfig(configAbs)
		if err != nil {
			return master.Config{}, err
		}
		return masterConfig(pc, configAbs, *name, *list, logger)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	// The administrator's channels: a socket only root may open, and the
	// pool's TLS (admin certificate only) for administrators elsewhere.
	endpoint := m.AdminEndpoint(reload)
	sock := masterSocket(runDirOf(pc), cfg.Host)
	lis, err := peercred.Listen(sock, 0o600)
	if err != nil {
		return fmt.Errorf("master: %w", err)
	}
	local := localAdminServer()
	wire.RegisterMasterAdminServer(local, endpoint)
	wg.Go(func() { serveUntil(ctx, local, lis, "administrator's socket", logger) })
	reg := metrics.NewRegistry()
	if err := serveMetrics(ctx, pc, "MASTER", "master."+cfg.Host, reg, &wg, logger); err != nil {
		return fmt.Errorf("master: %w", err)
	}
	var adminAddr string
	serverTLS, clientTLS, err := hostTLS(pc)
	if err != nil {
		logger.Info("no administration over the network, and no master ad: no startd or agent certificate on this host", "err", err)
	} else {
		tcp, err := net.Listen("tcp", net.JoinHostPort(pc.c.String("BIND_HOST", "127.0.0.1"), pc.c.String("MASTER_ADMIN_PORT", "0")))
		if err != nil {
			return fmt.Errorf("master: listen: %w", err)
		}
		adminAddr = tcp.Addr().String()
		remote := grpc.NewServer(append(metrics.NewRPC(reg).ServerOptions(), wire.ServerOptions(serverTLS)...)...)
		wire.RegisterMasterAdminServer(remote, endpoint)
		wg.Go(func() { serveUntil(ctx, remote, tcp, "administration over TLS", logger) })
		started := time.Now()
		wg.Go(func() { advertiseMaster(ctx, m, pc, cfg.Host, started, adminAddr, clientTLS, logger) })
	}
	wg.Go(func() { reconfigOnHangup(ctx, hup, m, reload, logger) })
	notifySystemd("READY=1")
	logger.Info("master started", "daemons", len(cfg.Daemons), "socket", sock, "admin_addr", adminAddr)
	err = m.Run(ctx)
	notifySystemd("STOPPING=1")
	stop()
	wg.Wait()
	logger.Info("master stopped")
	return err
}

// serveUntil serves srv on lis until ctx is done.
func serveUntil(ctx context.Context, srv *grpc.Server, lis net.Listener, what string, logger *slog.Logger) {
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		logger.Error(what+" failed", "err", err)
	}
}

// hostTLS returns the TLS configurations a master uses in the pool. A
// master has no certificate of its own: it uses its host's startd's, else
// its agent's.
func hostTLS(pc *poolConfig) (server, client *tls.Config, err error) {
	var errs []error
	for _, role := range []pki.Role{pki.RoleStartd, pki.RoleAgent} {
		server, client, err := pc.tlsConfigs(string(role))
		if err == nil {
			return server, client, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, errors.Join(errs...)
}

// reconfigOnHangup re-reads the configuration on each SIGHUP, as
// condor_master does, until ctx is done.
func reconfigOnHangup(ctx context.Context, hup <-chan os.Signal, m *master.Master, reload func() (master.Config, error), logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := reload()
		if err == nil {
			err = m.Reconfigure(ctx, cfg)
		}
		if err != nil {
			logger.Error("reconfig refused; running on", "err", err)
		}
	}
}

// masterSocket is where the master of host serves the administrator.
func masterSocket(runDir, host string) string {
	return filepath.Join(runDir, "master."+host+".sock")
}

// runDirOf is the pool's RUN directory (default $(POOL_DIR)/run), where
// masters keep their pid files and sockets.
func runDirOf(pc *poolConfig) string {
	return pc.c.String("RUN", filepath.Join(pc.c.String("POOL_DIR", filepath.Dir(pc.path)), "run"))
}

// daemonRoles are the daemons a master can run, by their DAEMON_LIST names.
var daemonRoles = map[string]string{"MATCHMAKER": "matchmaker", "AGENT": "agent", "STARTD": "startd", "DEFRAG": "defrag"}

// masterConfig builds the master's configuration from the pool's: which
// daemons (DAEMON_LIST, or list), where they log (LOG, default
// $(POOL_DIR)/log) and keep their pid files (RUN, default $(POOL_DIR)/run),
// and the MASTER_* settings, named and defaulting as documented in
// docs/pool.md.
func masterConfig(pc *poolConfig, configPath, host, list string, logger *slog.Logger) (master.Config, error) {
	cfg := master.DefaultConfig()
	cfg.Logger = logger
	if list == "" {
		list = pc.c.String("DAEMON_LIST", "MATCHMAKER, AGENT, STARTD")
	}
	poolDir := pc.c.String("POOL_DIR", filepath.Dir(configPath))
	logDir := pc.c.String("LOG", filepath.Join(poolDir, "log"))
	runDir := runDirOf(pc)
	cfg.Host = host
	if cfg.Host == "" {
		cfg.Host = hostName()
	}
	for _, dir := range []string{logDir, runDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return cfg, fmt.Errorf("master: %w", err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return cfg, fmt.Errorf("master: find own executable: %w", err)
	}
	cfg.Executable = exe
	for _, item := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		item = strings.ToUpper(item)
		if item == "MASTER" {
			continue // HTCondor lists itself; so may we
		}
		role, ok := daemonRoles[item]
		if !ok {
			return cfg, fmt.Errorf("master: DAEMON_LIST names %q; known daemons are MATCHMAKER, AGENT, STARTD and DEFRAG", item)
		}
		argv := []string{exe, "daemon", role, "--config", configPath}
		name := role
		if role == "startd" && host != "" {
			argv = append(argv, "--name", host)
			name = host
		}
		cfg.Daemons = append(cfg.Daemons, master.Daemon{Name: name, Argv: argv,
			Log: filepath.Join(logDir, name+".log"), PidFile: master.PidFile(runDir, name),
			AdminSocket: daemonAdminSocket(runDir, name)})
	}
	var errs []error
	dur := func(key string, d *time.Duration) {
		v, err := pc.c.Duration(key, *d)
		errs = append(errs, err)
		*d = v
	}
	dur("MASTER_BACKOFF_CONSTANT", &cfg.BackoffConstant)
	dur("MASTER_BACKOFF_CEILING", &cfg.BackoffCeiling)
	dur("MASTER_RECOVER_FACTOR", &cfg.RecoverAfter)
	dur("MASTER_CHECK_NEW_EXEC_INTERVAL", &cfg.CheckExecInterval)
	dur("MASTER_STOP_GRACE", &cfg.StopGrace)
	if v := pc.c.String("MASTER_BACKOFF_FACTOR", ""); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			errs = append(errs, fmt.Errorf("MASTER_BACKOFF_FACTOR: invalid number %q", v))
		}
		cfg.BackoffFactor = f
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("master: %w", err)
	}
	return cfg, nil
}

// notifySystemd sends state to systemd's notification socket when the
// master runs as a Type=notify service; elsewhere it does nothing.
func notifySystemd(state string) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return
	}
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte(state))
}

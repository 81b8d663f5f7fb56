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
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/config"
	"harrier.dev/harrier/gpu"
	"harrier.dev/harrier/jobargs"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/matchmaker/accountdb"
	"harrier.dev/harrier/metrics"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/startd"
	"harrier.dev/harrier/timeseries"
	"harrier.dev/harrier/token"
	"harrier.dev/harrier/web"
	"harrier.dev/harrier/wire"
)

// runDaemon runs one of the pool's daemons in the foreground until SIGTERM
// or SIGINT.
func runDaemon(args []string, _ io.Reader, _ io.Writer) error {
	if len(args) == 0 {
		return usagef("which daemon? matchmaker, agent, startd or defrag")
	}
	role := args[0]
	fs := flag.NewFlagSet("daemon "+role, flag.ContinueOnError)
	configPath := fs.String("config", "", "the pool's configuration file")
	name := fs.String("name", "", "this daemon's name (startd: the machine name it advertises)")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("%v", err)
	}
	if *configPath == "" {
		return usagef("--config is required")
	}
	pc, err := loadPoolConfig(*configPath)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(pc)})).With("daemon", role)
	// SIGQUIT (from the master, on harrier off -fast) stops the daemon
	// at once: a startd kills its jobs where SIGTERM has it vacate them.
	// Its default would dump the goroutines.
	base, stopFast := context.WithCancelCause(context.Background())
	defer stopFast(nil)
	quit := make(chan os.Signal, 1)
	signal.Notify(quit, syscall.SIGQUIT)
	defer signal.Stop(quit)
	ctx, stop := signal.NotifyContext(base, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP (from the master, on harrier reconfig) re-reads the
	// configuration; its default would end the daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reconfigs := make(chan reconfig)
	// The configuration the daemon runs on, for the administrator.
	var running atomic.Pointer[runningConfig]
	running.Store(&runningConfig{pc: pc, started: pc})
	adminName := role
	if role == "startd" && *name != "" {
		adminName = *name // as its master names it
	}
	runDir := runDirOf(pc)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	adminLis, err := peercred.Listen(daemonAdminSocket(runDir, adminName), 0o600)
	if err != nil {
		return fmt.Errorf("%s: administrator's socket: %w", role, err)
	}
	admin := &daemonAdminEndpoint{running: &running}
	var wg sync.WaitGroup
	adminSrv := localAdminServer()
	wire.RegisterDaemonAdminServer(adminSrv, admin)
	wg.Go(func() { serveUntil(ctx, adminSrv, adminLis, "administrator's socket", logger) })
	wg.Go(func() {
		select {
		case <-quit:
			logger.Info("stopping fast")
			stopFast(startd.ErrStopFast)
		case <-ctx.Done():
		}
	})
	subsys := strings.ToUpper(role)
	wg.Go(func() {
		rereadOnHangup(ctx, hup, &running, reconfigs, slices.Concat(metricsKeys(subsys), profilingKeys(subsys), webKeys(subsys)), logger)
	})
	// The daemon's own registry: the parts it hands it to count there.
	reg := metrics.NewRegistry()
	if _, known := daemonRoles[subsys]; !known {
		err = usagef("unknown daemon %q", role)
	} else {
		err = serveMetrics(ctx, pc, subsys, adminName, reg, &wg, logger)
	}
	if err == nil {
		switch role {
		case "matchmaker":
			err = serveMatchmaker(ctx, pc, reg, reconfigs, logger)
		case "agent":
			err = serveAgent(ctx, pc, *name, reg, reconfigs, logger)
		case "startd":
			err = serveStartd(ctx, pc, *name, reg, reconfigs, admin, logger)
		case "defrag":
			err = serveDefrag(ctx, pc, reconfigs, logger)
		}
	}
	stop()
	wg.Wait()
	var ue usageError
	if errors.As(err, &ue) {
		return err
	}
	if err != nil {
		logger.Error("daemon failed", "err", err)
		return err
	}
	logger.Info("daemon stopped")
	return nil
}

// runningConfig is the configuration a daemon runs on: the one it last
// applied, but for the settings named in restart, which changed in that
// configuration and take effect only when the daemon restarts; those it
// runs on as the configuration it started with has them.
type runningConfig struct {
	pc, started *poolConfig
	restart     []string // configuration keys, sorted
}

// restarting reports whether key waits for a restart.
func (r *runningConfig) restarting(key string) bool {
	return slices.ContainsFunc(r.restart, func(k string) bool { return strings.EqualFold(k, key) })
}

// rereadOnHangup re-reads the configuration file on each SIGHUP until
// ctx is done and hands it to the daemon on reconfigs, which applies what
// it can at once and names the settings that need a restart, or refuses
// all of it. It logs which settings changed and which of them are not
// applied, as HTCondor's daemons do, and keeps running up to date. A
// file that does not load, or that the daemon refuses, is logged and
// changes nothing. The keys atStart are read only when the daemon starts.
func rereadOnHangup(ctx context.Context, hup <-chan os.Signal, running *atomic.Pointer[runningConfig], reconfigs chan<- reconfig, atStart []string, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cur := running.Load()
		next, err := loadPoolConfig(cur.pc.path)
		if err != nil {
			logger.Error("reconfig refused; running on the configuration read before", "err", err)
			continue
		}
		rc := reconfig{pc: next, result: make(chan applied, 1)}
		select {
		case reconfigs <- rc:
		case <-ctx.Done():
			return
		}
		var res applied
		select {
		case res = <-rc.result:
		case <-ctx.Done():
			return
		}
		if res.err != nil {
			logger.Error("reconfig refused; running on the configuration read before", "err", res.err)
			continue
		}
		// Every daemon sets its log level when it starts, and the
		// address of its metrics (atStart).
		restart := append(res.restart, restartKeys(cur.started, next, append([]string{"LOG_LEVEL"}, atStart...)...)...)
		slices.Sort(restart)
		restart = slices.Compact(restart)
		running.Store(&runningConfig{pc: next, started: cur.started, restart: restart})
		changed := changedKeys(cur.pc.c, next.c)
		if len(restart) > 0 {
			logger.Warn("configuration re-read; settings marked not_applied take effect only when the daemon restarts",
				"changed", changed, "not_applied", restart)
		} else {
			logger.Info("configuration re-read", "changed", changed)
		}
	}
}

// reconfig is a re-read configuration handed to a daemon, which answers
// on result whether it applied it.
type reconfig struct {
	pc     *poolConfig
	result chan applied // capacity 1
}

// applied is a daemon's answer to a reconfig: err if it refused the
// configuration, else the keys of the settings that differ from those it
// runs on and that it applies only when it restarts.
type applied struct {
	restart []string
	err     error
}

// applyReconfigs has apply take each configuration that arrives on
// reconfigs, answering with what it did, until ctx is done. It returns a
// function that waits for that: defer it before the cancellation of ctx.
func applyReconfigs(ctx context.Context, reconfigs <-chan reconfig, apply func(*poolConfig) (restart []string, err error)) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case rc := <-reconfigs:
				restart, err := apply(rc.pc)
				rc.result <- applied{restart: restart, err: err}
			}
		}
	})
	return wg.Wait
}

// restartKeys names those of keys whose expanded values differ between
// the configuration a daemon started with and next: the settings of a
// daemon that it reads only when it starts.
func restartKeys(started, next *poolConfig, keys ...string) []string {
	changed := changedKeys(started.c, next.c)
	var names []string
	for _, k := range keys {
		if slices.Contains(changed, strings.ToLower(k)) {
			names = append(names, k)
		}
	}
	return names
}

// changedKeys lists the keys whose expanded value differs between two
// configurations, or that only one defines. (Values, unlike Lookup, does
// not count as the daemon using a key.)
func changedKeys(old, next *config.Config) []string {
	lower := func(values map[string]string) map[string]string {
		m := make(map[string]string, len(values))
		for k, v := range values {
			m[strings.ToLower(k)] = v
		}
		return m
	}
	a, b := lower(old.Values()), lower(next.Values())
	var changed []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			changed = append(changed, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed
}

func logLevel(pc *poolConfig) slog.Level {
	var l slog.Level
	if v, ok := pc.c.Lookup("LOG_LEVEL"); ok && l.UnmarshalText([]byte(v)) == nil {
		return l
	}
	return slog.LevelInfo
}

func serveMatchmaker(ctx context.Context, pc *poolConfig, reg prometheus.Registerer, reconfigs <-chan reconfig, logger *slog.Logger) error {
	addr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return err
	}
	listen := pc.c.String("MATCHMAKER_LISTEN", addr)
	cfg, err := matchmakerConfig(pc, logger)
	if err != nil {
		return err
	}
	// ACCOUNTANT_DSN keeps the accountant in a database, under the pool's
	// name, instead of ACCOUNTANT_FILE.
	if dsn := pc.c.String("ACCOUNTANT_DSN", ""); dsn != "" {
		pool := pc.c.String("POOL_NAME", addr)
		if cfg.AccountantStore, err = accountdb.Open(ctx, dsn, pool); err != nil {
			return fmt.Errorf("matchmaker: ACCOUNTANT_DSN: %w", err)
		}
		logger.Info("accountant in a database", "dsn", redactDSN(dsn), "pool", pool)
	}
	cfg.Metrics = reg
	mm, err := matchmaker.New(cfg)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("matchmaker: listen on %s: %w", listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	historyFile, err := pc.matchmakerStateFile("MATCHMAKER_WEB_HISTORY_FILE", "web-history.json")
	if err != nil {
		cancel()
		lis.Close()
		return err
	}
	waitWeb, err := serveWeb(ctx, pc, "MATCHMAKER", "matchmaker", cfg.Interval, statusPages{
		series: web.PoolSeries, sample: func() []float64 { return web.PoolSample(mm) }, historyFile: historyFile,
		pages: func(h *timeseries.Store) http.Handler { return web.NewPool(mm, h, "matchmaker "+addr, logger) },
	}, logger)
	if err != nil {
		cancel()
		lis.Close()
		return err
	}
	defer waitWeb()
	started := pc
	defer applyReconfigs(ctx, reconfigs, func(pc *poolConfig) ([]string, error) {
		cfg, err := matchmakerConfig(pc, logger)
		if err != nil {
			return nil, err
		}
		if err := mm.Reconfigure(cfg); err != nil {
			return nil, err
		}
		// The negotiation interval, PREEMPTION_REQUIREMENTS and the
		// concurrency limits change live; the accountant, the licenses, the reservation book and
		// the listener are made at start.
		return restartKeys(started, pc, "MATCHMAKER_ADDR", "MATCHMAKER_LISTEN", "PRIORITY_HALFLIFE",
			"DEFAULT_PRIO_FACTOR", "PRIORITY_FACTORS", "ACCOUNTANT_FILE", "NEGOTIATOR_STATS_FILE",
			"LICENSE_FILE", "GANG_ALGORITHM", "RESERVATION_FILE", "RESERVATION_POLICY_FILE", "ACCOUNTANT_DSN",
			"MATCHMAKER_WEB_HISTORY_FILE"), nil
	})()
	defer cancel()
	logger.Info("matchmaker listening", "addr", lis.Addr().String())
	return mm.Serve(ctx, lis)
}

// matchmakerConfig reads the matchmaker's configuration from the pool's.
func matchmakerConfig(pc *poolConfig, logger *slog.Logger) (matchmaker.Config, error) {
	var cfg matchmaker.Config
	serverTLS, clientTLS, err := pc.tlsConfigs("matchmaker")
	if err != nil {
		return cfg, err
	}
	interval, err := pc.c.Duration("NEGOTIATOR_INTERVAL", 20*time.Second)
	if err != nil {
		return cfg, err
	}
	halfLife, err := pc.c.Duration("PRIORITY_HALFLIFE", matchmaker.DefaultHalfLife)
	if err != nil {
		return cfg, err
	}
	factor := 1.0
	if v := pc.c.String("DEFAULT_PRIO_FACTOR", ""); v != "" {
		if factor, err = strconv.ParseFloat(v, 64); err != nil || factor <= 0 {
			return cfg, fmt.Errorf("DEFAULT_PRIO_FACTOR %q: want a positive number", v)
		}
	}
	factors, err := priorityFactors(pc.c.String("PRIORITY_FACTORS", ""))
	if err != nil {
		return cfg, err
	}
	accountantFile, err := pc.matchmakerStateFile("ACCOUNTANT_FILE", "accountant.json")
	if err != nil {
		return cfg, err
	}
	statsFile, err := pc.matchmakerStateFile("NEGOTIATOR_STATS_FILE", "negotiator.json")
	if err != nil {
		return cfg, err
	}
	reservationFile, err := pc.matchmakerStateFile("RESERVATION_FILE", "reservations.json")
	if err != nil {
		return cfg, err
	}
	// The startds advertise every UPDATE_INTERVAL: after that long a
	// restarted matchmaker knows every license seat their claims hold.
	update, err := pc.c.Duration("UPDATE_INTERVAL", 10*time.Second)
	if err != nil {
		return cfg, err
	}
	limits, err := matchmaker.LimitsFromConfig(pc.c.Keys(), func(key string) string { return pc.c.String(key, "") }, notConcurrencyLimits)
	if err != nil {
		return cfg, err
	}
	return matchmaker.Config{Logger: logger, TLS: serverTLS, ClientTLS: clientTLS, Interval: interval, Limits: limits,
		HalfLife: halfLife, DefaultPriorityFactor: factor, PriorityFactors: factors, AccountantFile: accountantFile, StatsFile: statsFile,
		ReservationFile: reservationFile, ReservationPolicyFile: pc.c.String("RESERVATION_POLICY_FILE", ""),
		PreemptionRequirements: pc.c.String("PREEMPTION_REQUIREMENTS", ""),
		LicenseFile:            pc.c.String("LICENSE_FILE", ""), LicenseHold: update + update/2,
		GangAlgorithm: pc.c.String("GANG_ALGORITHM", "")}, nil
}

// notConcurrencyLimits are the knobs whose names end in _LIMIT that are
// not concurrency limits.
var notConcurrencyLimits = map[string]bool{"SCRATCH_LIMIT": true, "SLOT_PIDS_LIMIT": true, "CPU_HARD_LIMIT": true}

// priorityFactors parses PRIORITY_FACTORS, a list of USER=FACTOR separated
// by commas or blanks: the users whose priority factor is not
// DEFAULT_PRIO_FACTOR (HTCondor's condor_userprio -setfactor, kept in the
// configuration).
func priorityFactors(v string) (map[string]float64, error) {
	factors := map[string]float64{}
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		user, num, ok := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(num, 64)
		if !ok || user == "" || err != nil || !(x > 0) {
			return nil, fmt.Errorf("PRIORITY_FACTORS: %q is not USER=FACTOR with a positive factor", f)
		}
		factors[user] = x
	}
	return factors, nil
}

func serveAgent(ctx context.Context, pc *poolConfig, name string, reg prometheus.Registerer, reconfigs <-chan reconfig, logger *slog.Logger) error {
	cfg, err := agentConfig(pc, name, logger)
	if err != nil {
		return err
	}
	spool, err := pc.require("SPOOL")
	if err != nil {
		return err
	}
	sock, err := pc.require("AGENT_SOCKET")
	if err != nil {
		return err
	}
	// The spool is the agent's alone: owners' shadows reach their
	// checkpoint stores through descriptors (see agent.Config.CheckpointDir).
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return fmt.Errorf("agent: spool: %w", err)
	}
	if err := os.Chmod(spool, 0o700); err != nil {
		return fmt.Errorf("agent: spool: %w", err)
	}
	queue, err := openStore(ctx, pc, spool, cfg.Name, logger)
	if err != nil {
		return fmt.Errorf("agent: open job queue: %w", err)
	}
	defer queue.Close()

	tcp, err := net.Listen("tcp", net.JoinHostPort(pc.c.String("BIND_HOST", "127.0.0.1"), pc.c.String("AGENT_PORT", "0")))
	if err != nil {
		return fmt.Errorf("agent: listen: %w", err)
	}
	local, err := peercred.Listen(sock, 0o666)
	if err != nil {
		return fmt.Errorf("agent: listen on %s: %w", sock, err)
	}
	tokens, err := agentTokens(pc, spool)
	if err != nil {
		return err
	}
	cfg.Queue, cfg.AdvertiseAddr, cfg.Metrics, cfg.Tokens = queue, tcp.Addr().String(), reg, tokens
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	remote, remoteJSON, remoteTLS, err := listenRemote(pc)
	if err != nil {
		return err
	}
	started := pc
	ctx, cancel := context.WithCancel(ctx)
	waitWeb, err := serveWeb(ctx, pc, "AGENT", "agent", cfg.AdvertiseInterval, statusPages{
		series: web.QueueSeries, sample: func() []float64 { return web.QueueSample(a) },
		historyFile: filepath.Join(spool, "web-history.json"),
		pages:       func(h *timeseries.Store) http.Handler { return web.NewQueue(a, h, cfg.Name, logger) },
	}, logger)
	if err != nil {
		cancel()
		for _, l := range []net.Listener{tcp, local, remote, remoteJSON} {
			if l != nil {
				l.Close()
			}
		}
		return err
	}
	defer waitWeb()
	defer applyReconfigs(ctx, reconfigs, func(pc *poolConfig) ([]string, error) {
		cfg, err := agentConfig(pc, name, logger)
		if err != nil {
			return nil, err
		}
		cfg.Queue, cfg.AdvertiseAddr, cfg.Tokens = queue, tcp.Addr().String(), tokens
		restart, err := a.Reconfigure(cfg)
		if err != nil {
			return nil, err
		}
		return append(restart, restartKeys(started, pc, "AGENT_SOCKET", "BIND_HOST", "AGENT_PORT", "QUEUE_STORE", "QUEUE_DSN",
			"AGENT_REMOTE_ADDRESS", "AGENT_API_ADDRESS", "TOKEN_SIGNING_KEY_FILE")...), nil
	})()
	defer cancel()
	logger.Info("agent listening", "addr", tcp.Addr().String(), "socket", sock)
	if remoteTLS == nil {
		return a.Serve(ctx, tcp, local)
	}
	for _, l := range []net.Listener{remote, remoteJSON} {
		if l != nil {
			logger.Info("agent's remote API listening", "addr", l.Addr().String())
		}
	}
	remoteDone := make(chan error, 1)
	go func() { remoteDone <- a.ServeRemote(ctx, remote, remoteJSON, remoteTLS) }()
	err = a.Serve(ctx, tcp, local)
	cancel()
	return errors.Join(err, <-remoteDone)
}

// tokenKeyName is the name of the pool's token signing key, as HTCondor
// calls its own (POOL).
const tokenKeyName = "POOL"

// agentTokens opens the agent's token signing key (TOKEN_SIGNING_KEY_FILE,
// by default token-POOL.key in the PKI directory, made on first use) and
// its registry of tokens (SPOOL/tokens.json).
func agentTokens(pc *poolConfig, spool string) (*agent.Tokens, error) {
	path := strings.TrimSpace(pc.c.String("TOKEN_SIGNING_KEY_FILE", ""))
	if path == "" {
		dir, err := pc.require("PKI_DIR")
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "token-"+tokenKeyName+".key")
	}
	key, err := token.LoadOrCreateKey(path, tokenKeyName)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	reg, err := token.OpenRegistry(filepath.Join(spool, "tokens.json"))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &agent.Tokens{Key: key, Registry: reg}, nil
}

// listenRemote opens the agent's remote API addresses, AGENT_REMOTE_ADDRESS
// (gRPC) and AGENT_API_ADDRESS (its JSON form), each HOST:PORT, with the
// agent's certificate; neither is opened if it is not set.
func listenRemote(pc *poolConfig) (grpcLis, jsonLis net.Listener, cfg *tls.Config, err error) {
	grpcAddr := strings.TrimSpace(pc.c.String("AGENT_REMOTE_ADDRESS", ""))
	jsonAddr := strings.TrimSpace(pc.c.String("AGENT_API_ADDRESS", ""))
	if grpcAddr == "" && jsonAddr == "" {
		return nil, nil, nil, nil
	}
	_, cert, key, err := pc.pkiPaths("agent")
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg, err = pki.UserServerConfig(cert, key); err != nil {
		return nil, nil, nil, fmt.Errorf("agent: remote API: %w", err)
	}
	if grpcAddr != "" {
		if grpcLis, err = net.Listen("tcp", grpcAddr); err != nil {
			return nil, nil, nil, fmt.Errorf("agent: remote API: listen: %w", err)
		}
	}
	if jsonAddr != "" {
		if jsonLis, err = net.Listen("tcp", jsonAddr); err != nil {
			if grpcLis != nil {
				grpcLis.Close()
			}
			return nil, nil, nil, fmt.Errorf("agent: JSON API: listen: %w", err)
		}
	}
	return grpcLis, jsonLis, cfg, nil
}

// agentConfig reads the agent's configuration from the pool's, but for
// its queue and address.
func agentConfig(pc *poolConfig, name string, logger *slog.Logger) (agent.Config, error) {
	var cfg agent.Config
	mmAddr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return cfg, err
	}
	spool, err := pc.require("SPOOL")
	if err != nil {
		return cfg, err
	}
	if name == "" {
		name = pc.c.String("AGENT_NAME", "agent@"+hostName())
	}
	serverTLS, clientTLS, err := pc.tlsConfigs("agent")
	if err != nil {
		return cfg, err
	}
	caPath, _, _, err := pc.pkiPaths("agent")
	if err != nil {
		return cfg, err
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return cfg, fmt.Errorf("agent: read the pool CA: %w", err)
	}
	interval, err := pc.c.Duration("UPDATE_INTERVAL", 10*time.Second)
	if err != nil {
		return cfg, err
	}
	workLife, err := pc.c.Duration("CLAIM_WORKLIFE", 1200*time.Second)
	if err != nil {
		return cfg, err
	}
	periodic, err := pc.c.Duration("PERIODIC_EXPR_INTERVAL", 60*time.Second)
	if err != nil {
		return cfg, err
	}
	limits, err := agentLimits(pc)
	if err != nil {
		return cfg, err
	}
	machineHistory, err := pc.c.Int("SYSTEM_JOB_MACHINE_ATTRS_HISTORY_LENGTH", 1)
	if err != nil {
		return cfg, err
	}
	exe, err := os.Executable()
	if err != nil {
		return cfg, err
	}
	return agent.Config{
		Name: name, Logger: logger,
		TLS: serverTLS, ClientTLS: clientTLS,
		CAPEM:               caPEM,
		MatchmakerAddr:      mmAddr,
		FlockTo:             pc.c.List("FLOCK_TO", ""),
		AccountingGroups:    pc.c.List("GROUP_NAMES", ""),
		MachineAttrs:        pc.c.List("SYSTEM_JOB_MACHINE_ATTRS", ""),
		MachineAttrsHistory: int(machineHistory),
		AdvertiseInterval:   interval,
		ShadowCommand:       []string{exe, "shadow"},
		ClaimWorkLife:       workLife,
		CheckpointDir:       filepath.Join(spool, "checkpoints"),
		PeriodicInterval:    periodic,
		Limits:              limits,
	}, nil
}

func serveStartd(ctx context.Context, pc *poolConfig, name string, reg prometheus.Registerer, reconfigs <-chan reconfig, admin *daemonAdminEndpoint, logger *slog.Logger) error {
	cfg, err := startdConfig(pc, name, logger)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.ExecuteDir, 0o755); err != nil {
		return fmt.Errorf("startd: execute directory: %w", err)
	}
	if err := writeSandboxPolicy(pc, cfg.ExecuteDir); err != nil {
		return fmt.Errorf("startd: %w", err)
	}
	if err := installContainerInit(pc, logger); err != nil {
		return fmt.Errorf("startd: %w", err)
	}
	lis, err := net.Listen("tcp", net.JoinHostPort(pc.c.String("BIND_HOST", "127.0.0.1"), "0"))
	if err != nil {
		return fmt.Errorf("startd: listen: %w", err)
	}
	cfg.AdvertiseAddr, cfg.Metrics = lis.Addr().String(), reg
	s, err := startd.New(cfg)
	if err != nil {
		lis.Close()
		return err
	}
	admin.setDrainer(s)
	ctx, cancel := context.WithCancel(ctx)
	defer applyReconfigs(ctx, reconfigs, func(pc *poolConfig) ([]string, error) {
		cfg, err := startdConfig(pc, name, logger)
		if err != nil {
			return nil, err
		}
		cfg.AdvertiseAddr = lis.Addr().String()
		return s.Reconfigure(cfg)
	})()
	defer cancel()
	logger.Info("startd listening", "addr", lis.Addr().String(), "name", cfg.Name)
	return s.Serve(ctx, lis)
}

// startdCron reads STARTD_CRON_JOBLIST and each job's
// STARTD_CRON_<NAME>_EXECUTABLE, _ARGS, _PERIOD, _PREFIX and _MODE
// (periodic, the default, or oneshot), as HTCondor names them.
func startdCron(pc *poolConfig) ([]startd.CronJob, error) {
	var jobs []startd.CronJob
	for _, name := range pc.c.List("STARTD_CRON_JOBLIST", "") {
		key := "STARTD_CRON_" + name + "_"
		exe, err := pc.require(key + "EXECUTABLE")
		if err != nil {
			return nil, err
		}
		args, err := jobargs.Split(pc.c.String(key+"ARGS", ""))
		if err != nil {
			return nil, fmt.Errorf("%sARGS: %w", key, err)
		}
		period, err := pc.c.Duration(key+"PERIOD", 0)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, startd.CronJob{
			Name: name, Executable: exe, Args: args, Period: period,
			Prefix: pc.c.String(key+"PREFIX", ""),
			Mode:   startd.CronMode(strings.ToLower(pc.c.String(key+"MODE", string(startd.CronPeriodic)))),
		})
	}
	return jobs, nil
}

// startdConfig reads a startd's configuration from the pool's.
func startdConfig(pc *poolConfig, name string, logger *slog.Logger) (startd.Config, error) {
	var cfg startd.Config
	mmAddr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return cfg, err
	}
	execute, err := pc.require("EXECUTE")
	if err != nil {
		return cfg, err
	}
	if name == "" {
		name = pc.c.String("STARTD_NAME", hostName())
	}
	serverTLS, clientTLS, err := pc.tlsConfigs("startd")
	if err != nil {
		return cfg, err
	}
	caPath, certPath, keyPath, err := pc.pkiPaths("startd")
	if err != nil {
		return cfg, err
	}
	interval, err := pc.c.Duration("UPDATE_INTERVAL", 10*time.Second)
	if err != nil {
		return cfg, err
	}
	slots, err := pc.c.Int("NUM_SLOTS", 1)
	if err != nil {
		return cfg, err
	}
	exe, err := os.Executable()
	if err != nil {
		return cfg, err
	}
	cfg = startd.Config{
		Name: name, Logger: logger, TLS: serverTLS, ClientTLS: clientTLS,
		MatchmakerAddr: mmAddr,
		NumSlots:       int(slots), ExecuteDir: filepath.Join(execute, name), AdvertiseInterval: interval,
		StarterCommand: []string{exe, "starter"},
		CertFile:       certPath, KeyFile: keyPath, CAFile: caPath,
		Sandbox: pc.c.String("SANDBOX", ""),
	}
	// STARTD_ATTRS names configuration macros whose values, ClassAd
	// expressions, join every slot's ad under the macro's name.
	for _, name := range pc.c.List("STARTD_ATTRS", "") {
		v := pc.c.String(name, "")
		if v == "" {
			return cfg, fmt.Errorf("STARTD_ATTRS names %s, which is not configured", name)
		}
		if cfg.Attrs == nil {
			cfg.Attrs = map[string]string{}
		}
		cfg.Attrs[name] = v
	}
	// Without the pool's checkpoint key, jobs run here but are neither
	// checkpointed nor restored (a vacated job's event log says why).
	if cfg.CheckpointKeyFile, err = pc.checkpointKeyPath(); err == nil {
		_, err = checkpoint.LoadKey(cfg.CheckpointKeyFile)
	}
	if err != nil {
		logger.Warn("no checkpoints on this machine", "err", err)
		cfg.CheckpointKeyFile = ""
	}
	cfg.CheckpointPlatform = pc.c.String("CHECKPOINT_PLATFORM", "")
	if err := startdPolicy(pc, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Cron, err = startdCron(pc); err != nil {
		return cfg, err
	}
	cfg.CronUser = pc.c.String("STARTD_CRON_USER", "")
	// STARTER_NUM_THREADS_ENV_VARS, as HTCondor's; empty sets none.
	cfg.ThreadEnvVars = pc.c.List("STARTER_NUM_THREADS_ENV_VARS", strings.Join(startd.DefaultThreadEnvVars, ", "))
	// FILETRANSFER_PLUGINS lists the administrator's transfer plugins.
	cfg.TransferPlugins = pc.c.List("FILETRANSFER_PLUGINS", "")
	if cfg.GPUs, err = gpu.Discover(context.Background(), gpu.Config{
		Method: gpu.Method(pc.c.String("GPU_DISCOVERY", string(gpu.Auto))),
		Static: pc.c.String("GPU_DEVICES", ""),
	}); err != nil {
		return cfg, fmt.Errorf("GPU discovery: %w", err)
	}
	if len(cfg.GPUs.Devices) > 0 {
		logger.Info("GPUs found", "gpus", strings.Join(gpu.IDs(cfg.GPUs.Devices), ","))
	}
	if err := startdResources(pc, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// startdResources reads how the machine is laid out in slots, with
// HTCondor's names: NUM_CPUS and MEMORY (MiB) in place of what is
// measured, ASSIGN_CPU_AFFINITY, and NUM_SLOTS_TYPE_<n> slots of each type n, each with the
// share SLOT_TYPE_<n> and partitionable if SLOT_TYPE_<n>_PARTITIONABLE.
// Slot types replace NUM_SLOTS.
func startdResources(pc *poolConfig, cfg *startd.Config) error {
	cpus, err := pc.c.Int("NUM_CPUS", 0)
	if err != nil {
		return err
	}
	if cfg.MemoryMiB, err = pc.c.Int("MEMORY", 0); err != nil {
		return err
	}
	cfg.NumCPUs = int(cpus)
	if cfg.AssignCPUAffinity, err = pc.c.Bool("ASSIGN_CPU_AFFINITY", false); err != nil {
		return err
	}
	var types []int
	for _, key := range pc.c.Keys() {
		if n, ok := strings.CutPrefix(key, "NUM_SLOTS_TYPE_"); ok {
			i, err := strconv.Atoi(n)
			if err != nil || i < 1 {
				return fmt.Errorf("%s: want NUM_SLOTS_TYPE_<n> with n from 1", key)
			}
			types = append(types, i)
		}
	}
	slices.Sort(types)
	for _, n := range types {
		count, err := pc.c.Int(fmt.Sprintf("NUM_SLOTS_TYPE_%d", n), 0)
		if err != nil {
			return err
		}
		part, err := pc.c.Bool(fmt.Sprintf("SLOT_TYPE_%d_PARTITIONABLE", n), false)
		if err != nil {
			return err
		}
		cfg.SlotTypes = append(cfg.SlotTypes, startd.SlotType{
			Count: int(count), Share: pc.c.String(fmt.Sprintf("SLOT_TYPE_%d", n), ""), Partitionable: part,
		})
	}
	return nil
}

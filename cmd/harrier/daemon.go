package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
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

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/config"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/matchmaker/accountdb"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/startd"
	"harrier.dev/harrier/wire"
)

// runDaemon runs one of the pool's daemons in the foreground until SIGTERM
// or SIGINT.
func runDaemon(args []string, _ io.Reader, _ io.Writer) error {
	if len(args) == 0 {
		return usagef("which daemon? matchmaker, agent or startd")
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP (from the master, on harrier reconfig) re-reads the
	// configuration; its default would end the daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reconfigs := make(chan reconfig)
	// The configuration the daemon runs on, for the administrator.
	var current atomic.Pointer[poolConfig]
	current.Store(pc)
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
	admin := &daemonAdminEndpoint{current: &current}
	var wg sync.WaitGroup
	adminSrv := localAdminServer()
	wire.RegisterDaemonAdminServer(adminSrv, admin)
	wg.Go(func() { serveUntil(ctx, adminSrv, adminLis, "administrator's socket", logger) })
	live := role == "startd" || role == "matchmaker"
	wg.Go(func() { rereadOnHangup(ctx, hup, pc, live, reconfigs, &current, logger) })
	switch role {
	case "matchmaker":
		err = serveMatchmaker(ctx, pc, reconfigs, logger)
	case "agent":
		err = serveAgent(ctx, pc, *name, logger)
	case "startd":
		err = serveStartd(ctx, pc, *name, reconfigs, admin, logger)
	default:
		err = usagef("unknown daemon %q", role)
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

// rereadOnHangup re-reads the configuration file on each SIGHUP until
// ctx is done and logs which settings changed. A startd or the
// matchmaker (live) takes the new configuration from reconfigs and
// applies what it can at once, or refuses all of it (current then stays
// the configuration it runs on); the agent applies changes when it
// restarts, which is logged. A file that does not load is logged and
// ignored.
func rereadOnHangup(ctx context.Context, hup <-chan os.Signal, pc *poolConfig, live bool, reconfigs chan<- reconfig, current *atomic.Pointer[poolConfig], logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		next, err := loadPoolConfig(pc.path)
		if err != nil {
			logger.Error("reconfig refused; running on the configuration read before", "err", err)
			continue
		}
		changed := changedKeys(pc.c, next.c)
		if !live {
			pc = next
			if len(changed) > 0 {
				logger.Warn("configuration re-read; this daemon applies changes when it restarts", "changed", changed)
			} else {
				logger.Info("configuration re-read; nothing changed")
			}
			continue
		}
		logger.Info("configuration re-read", "changed", changed)
		rc := reconfig{pc: next, result: make(chan error, 1)}
		select {
		case reconfigs <- rc:
		case <-ctx.Done():
			return
		}
		select {
		case err := <-rc.result:
			if err != nil {
				logger.Error("reconfig refused; running on the configuration read before", "err", err)
				continue
			}
		case <-ctx.Done():
			return
		}
		// What the daemon now runs on, for the administrator.
		pc = next
		current.Store(next)
	}
}

// reconfig is a re-read configuration handed to a daemon, which answers
// on result whether it applied it.
type reconfig struct {
	pc     *poolConfig
	result chan error // capacity 1
}

// applyReconfigs has apply take each configuration that arrives on
// reconfigs, answering with its error, until ctx is done. It returns a
// function that waits for that: defer it before the cancellation of ctx.
func applyReconfigs(ctx context.Context, reconfigs <-chan reconfig, apply func(*poolConfig) error) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case rc := <-reconfigs:
				rc.result <- apply(rc.pc)
			}
		}
	})
	return wg.Wait
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

func serveMatchmaker(ctx context.Context, pc *poolConfig, reconfigs <-chan reconfig, logger *slog.Logger) error {
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
	mm, err := matchmaker.New(cfg)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("matchmaker: listen on %s: %w", listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer applyReconfigs(ctx, reconfigs, func(pc *poolConfig) error {
		cfg, err := matchmakerConfig(pc, logger)
		if err != nil {
			return err
		}
		return mm.Reconfigure(cfg)
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
	return matchmaker.Config{Logger: logger, TLS: serverTLS, ClientTLS: clientTLS, Interval: interval,
		HalfLife: halfLife, DefaultPriorityFactor: factor, PriorityFactors: factors, AccountantFile: accountantFile, StatsFile: statsFile,
		PreemptionRequirements: pc.c.String("PREEMPTION_REQUIREMENTS", "")}, nil
}

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

func serveAgent(ctx context.Context, pc *poolConfig, name string, logger *slog.Logger) error {
	mmAddr, err := pc.require("MATCHMAKER_ADDR")
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
	if name == "" {
		name = pc.c.String("AGENT_NAME", "agent@"+hostName())
	}
	serverTLS, clientTLS, err := pc.tlsConfigs("agent")
	if err != nil {
		return err
	}
	caPath, _, _, err := pc.pkiPaths("agent")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return fmt.Errorf("agent: read the pool CA: %w", err)
	}
	interval, err := pc.c.Duration("UPDATE_INTERVAL", 10*time.Second)
	if err != nil {
		return err
	}
	workLife, err := pc.c.Duration("CLAIM_WORKLIFE", 1200*time.Second)
	if err != nil {
		return err
	}
	periodic, err := pc.c.Duration("PERIODIC_EXPR_INTERVAL", 60*time.Second)
	if err != nil {
		return err
	}
	limits, err := agentLimits(pc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return fmt.Errorf("agent: spool: %w", err)
	}
	queue, err := openStore(ctx, pc, spool, name, logger)
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
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{
		Name: name, Logger: logger, Queue: queue,
		TLS: serverTLS, ClientTLS: clientTLS,
		CAPEM:          caPEM,
		MatchmakerAddr: mmAddr, AdvertiseAddr: tcp.Addr().String(),
		FlockTo:           strings.Fields(strings.ReplaceAll(pc.c.String("FLOCK_TO", ""), ",", " ")),
		AdvertiseInterval: interval,
		ShadowCommand:     []string{exe, "shadow"},
		ClaimWorkLife:     workLife,
		CheckpointDir:     filepath.Join(spool, "checkpoints"),
		PeriodicInterval:  periodic,
		Limits:            limits,
	})
	if err != nil {
		return err
	}
	logger.Info("agent listening", "addr", tcp.Addr().String(), "socket", sock)
	return a.Serve(ctx, tcp, local)
}

func serveStartd(ctx context.Context, pc *poolConfig, name string, reconfigs <-chan reconfig, admin *daemonAdminEndpoint, logger *slog.Logger) error {
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
	lis, err := net.Listen("tcp", net.JoinHostPort(pc.c.String("BIND_HOST", "127.0.0.1"), "0"))
	if err != nil {
		return fmt.Errorf("startd: listen: %w", err)
	}
	cfg.AdvertiseAddr = lis.Addr().String()
	s, err := startd.New(cfg)
	if err != nil {
		lis.Close()
		return err
	}
	admin.setDrainer(s)
	ctx, cancel := context.WithCancel(ctx)
	defer applyReconfigs(ctx, reconfigs, func(pc *poolConfig) error {
		cfg, err := startdConfig(pc, name, logger)
		if err != nil {
			return err
		}
		cfg.AdvertiseAddr = lis.Addr().String()
		return s.Reconfigure(cfg)
	})()
	defer cancel()
	logger.Info("startd listening", "addr", lis.Addr().String(), "name", cfg.Name)
	return s.Serve(ctx, lis)
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
	// Without the pool's checkpoint key, jobs run here but are neither
	// checkpointed nor restored (a vacated job's event log says why).
	if cfg.CheckpointKeyFile, err = pc.checkpointKeyPath(); err == nil {
		_, err = checkpoint.LoadKey(cfg.CheckpointKeyFile)
	}
	if err != nil {
		logger.Warn("no checkpoints on this machine", "err", err)
		cfg.CheckpointKeyFile = ""
	}
	if err := startdPolicy(pc, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

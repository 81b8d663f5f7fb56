package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// runPool starts or stops a personal pool: one matchmaker, one agent and N
// startds on this machine, each its own process, all state under one
// directory.
func runPool(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("want up or down")
	}
	fs := flag.NewFlagSet("pool "+args[0], flag.ContinueOnError)
	dir := fs.String("dir", "", "the pool directory")
	startds := fs.Int("startds", 1, "number of startds")
	detach := fs.Bool("detach", false, "return once the pool accepts jobs")
	store := fs.String("store", "", "where a new pool's agent keeps its job queue: embedded (the default), or a postgres:// URL of a database")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("%v", err)
	}
	if *dir == "" {
		return usagef("--dir is required")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	switch args[0] {
	case "up":
		if *startds < 1 {
			return usagef("--startds must be at least 1")
		}
		return poolUp(abs, *startds, *detach, *store, stdout)
	case "down":
		return poolDown(abs, stdout)
	}
	return usagef("unknown pool command %q", args[0])
}

// queueStoreConf checks pool up's --store and returns the configuration
// lines that say it.
func queueStoreConf(store string) (string, error) {
	switch {
	case store == "" || store == storeEmbedded:
		return "", nil
	case strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://"):
		if _, err := pgx.ParseConfig(store); err != nil {
			return "", usagef("--store: %v", err)
		}
		// pool.conf is every user's to read.
		if dsnHasPassword(store) {
			return "", usagef("--store: keep the password out of the URL, in the agent's ~/.pgpass or PGPASSFILE: pool.conf is readable by every user")
		}
		return fmt.Sprintf("\n# The agent keeps its job queue in this PostgreSQL database, and the matchmaker its accountant.\nQUEUE_STORE = %s\nQUEUE_DSN = %s\nACCOUNTANT_DSN = $(QUEUE_DSN)\n", storePostgres, store), nil
	}
	return "", usagef("--store %q: want embedded or a postgres:// URL", store)
}

// sameStore refuses a --store that differs from the store an existing
// pool was made with: its jobs are in that one.
func sameStore(pc *poolConfig, store string) error {
	if store == "" {
		return nil
	}
	have := pc.c.String("QUEUE_STORE", storeEmbedded)
	if strings.EqualFold(have, storePostgres) {
		have = pc.c.String("QUEUE_DSN", "")
	}
	if have != store {
		return fmt.Errorf("the pool in %s keeps its job queue in %s, not %s: change QUEUE_STORE and QUEUE_DSN in %s to move it",
			filepath.Dir(pc.path), redactDSN(have), redactDSN(store), pc.path)
	}
	return nil
}

// How long pool up waits for the pool to accept jobs.
const poolUpTimeout = 60 * time.Second

func poolUp(dir string, startds int, detach bool, store string, stdout io.Writer) error {
	storeConf, err := queueStoreConf(store)
	if err != nil {
		return err
	}
	confPath := filepath.Join(dir, poolConfigName)
	if _, err := os.Stat(confPath); errors.Is(err, os.ErrNotExist) {
		if err := createPool(dir); err != nil {
			return err
		}
		if storeConf != "" {
			if err := appendFile(confPath, storeConf); err != nil {
				return err
			}
		}
	}
	pc, err := loadPoolConfig(confPath)
	if err != nil {
		return err
	}
	if err := sameStore(pc, store); err != nil {
		return err
	}
	// A pool made before checkpoints were sealed gets its key now.
	keyPath, err := pc.checkpointKeyPath()
	if err != nil {
		return err
	}
	if err := checkpoint.CreateKeyFile(keyPath); err != nil {
		return err
	}
	// So does a pool made before the administrator had a certificate.
	if err := ensureAdminCert(pc); err != nil {
		return err
	}
	mm, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return err
	}
	// A host whose master runs is up, whatever its daemons are doing: the
	// master restarts them. A host without one gets one, after any daemon
	// of its left running without a master is stopped.
	started := 0
	for i, h := range poolHosts(startds) {
		if pid := readPid(masterPidFile(dir, h.name)); pid > 0 && alive(pid) {
			continue
		}
		for _, d := range h.daemons {
			pidFile := filepath.Join(dir, "run", d.name+".pid")
			if pid := readPid(pidFile); pid > 0 && alive(pid) {
				stopProcess(pid, 15*time.Second)
			}
			os.Remove(pidFile)
		}
		if err := startMaster(dir, confPath, h); err != nil {
			_ = poolDown(dir, io.Discard)
			return err
		}
		started++
		if i == 0 {
			// The others advertise to the matchmaker as soon as they start.
			waitListening(mm, 10*time.Second)
		}
	}
	if started == 0 {
		fmt.Fprintf(stdout, "The pool in %s is already up.\n", dir)
	}
	if err := waitReady(dir, pc, startds); err != nil {
		_ = poolDown(dir, io.Discard)
		return fmt.Errorf("%w (daemon logs are in %s)", err, filepath.Join(dir, "log"))
	}
	fmt.Fprintf(stdout, "Pool up in %s: matchmaker at %s, agent, %d startd(s).\n", dir, mm, startds)
	if lines := poolWeb(runDirOf(pc)); len(lines) > 0 {
		fmt.Fprintf(stdout, "Status pages:\n  %s\n", strings.Join(lines, "\n  "))
	}
	if lines := poolMetrics(runDirOf(pc)); len(lines) > 0 {
		fmt.Fprintf(stdout, "Metrics:\n  %s\n", strings.Join(lines, "\n  "))
	}
	if detach {
		fmt.Fprintf(stdout, "Use it with: export HARRIER_POOL=%s\n", dir)
		return nil
	}
	fmt.Fprintln(stdout, "Press Ctrl-C to take it down.")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return poolDown(dir, stdout)
}

// daemonSpec is one daemon of a personal pool.
type daemonSpec struct {
	role, name string
}

// poolHost is one simulated host of a personal pool, with a master of its
// own running its daemons: the first runs the matchmaker, the agent and a
// startd, each other one a startd.
type poolHost struct {
	name    string
	daemons []daemonSpec
}

func poolHosts(startds int) []poolHost {
	var hosts []poolHost
	host := hostName()
	for i := 1; i <= startds; i++ {
		name := host
		if startds > 1 {
			name = fmt.Sprintf("%s-%d", host, i)
		}
		h := poolHost{name: name}
		if i == 1 {
			h.daemons = []daemonSpec{{"matchmaker", "matchmaker"}, {"agent", "agent"}}
		}
		h.daemons = append(h.daemons, daemonSpec{"startd", name})
		hosts = append(hosts, h)
	}
	return hosts
}

// masterPidFile is where pool up keeps the pid of host's master.
func masterPidFile(dir, host string) string {
	return filepath.Join(dir, "run", "master."+host+".pid")
}

// startMaster starts host's master in its own session, so that it
// outlives this command, with its log in the pool's log directory.
func startMaster(dir, confPath string, h poolHost) error {
	var roles []string
	for _, d := range h.daemons {
		roles = append(roles, strings.ToUpper(d.role))
	}
	return startDetached(dir, "master."+h.name, masterPidFile(dir, h.name),
		"master", "--config", confPath, "--name", h.name, "--daemons", strings.Join(roles, ","))
}

// createPool writes a new pool's configuration and its PKI: a pool CA and
// one certificate for each daemon role. (poolUp adds the checkpoint key.)
func createPool(dir string) error {
	for _, sub := range []string{"", "pki", "log", "run", "spool", "execute"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	// Keys, and logs (which may carry jobs' environments and paths), are
	// the administrator's alone; pool.conf stays readable, since every
	// user's tools read it to find the agent, and holds no secret.
	for _, private := range []string{"pki", "log"} {
		if err := os.Chmod(filepath.Join(dir, private), 0o700); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# Harrier personal pool, created %s.
POOL_DIR = %s
POOL_NAME = personal
MATCHMAKER_HOST = 127.0.0.1
MATCHMAKER_PORT = %d
MATCHMAKER_ADDR = $(MATCHMAKER_HOST):$(MATCHMAKER_PORT)
BIND_HOST = 127.0.0.1
PKI_DIR = $(POOL_DIR)/pki
SPOOL = $(POOL_DIR)/spool
EXECUTE = $(POOL_DIR)/execute
AGENT_SOCKET = $(POOL_DIR)/run/agent.sock
AGENT_NAME = agent@$(POOL_NAME)

# Negotiation runs when jobs or machines change, and at least this often.
NEGOTIATOR_INTERVAL = 20
# Daemons refresh their ads this often (seconds); ads live three times as long.
UPDATE_INTERVAL = 5
# The agent evaluates periodic_hold/release/remove this often (seconds).
PERIODIC_EXPR_INTERVAL = 10
# A claimed machine runs further jobs of the same agent for this long (seconds).
CLAIM_WORKLIFE = 1200

# Owner policy: ClassAd expressions evaluated by each startd.
START = TRUE
RANK = 0
`, time.Now().Format(time.RFC3339), dir, port)
	pkiDir := filepath.Join(dir, "pki")
	ca, err := pki.CreateCA(pkiDir, "harrier-personal")
	if err != nil {
		return fmt.Errorf("create pool CA: %w", err)
	}
	for _, role := range []string{"matchmaker", "agent", "startd", "admin"} {
		if err := ca.Issue(role+"@"+hostName(), []string{"127.0.0.1", "localhost", hostName()},
			filepath.Join(pkiDir, role+".pem"), filepath.Join(pkiDir, role+".key")); err != nil {
			return fmt.Errorf("issue %s certificate: %w", role, err)
		}
	}
	return os.WriteFile(filepath.Join(dir, poolConfigName), []byte(conf), 0o644)
}

// ensureAdminCert issues the pool administrator's certificate
// (admin.pem, admin.key in PKI_DIR) if the pool has none.
func ensureAdminCert(pc *poolConfig) error {
	_, cert, key, err := pc.pkiPaths(string(pki.RoleAdmin))
	if err != nil {
		return err
	}
	if _, err := os.Stat(cert); err == nil {
		return nil
	}
	ca, err := pki.LoadCA(filepath.Dir(cert))
	if err != nil {
		return fmt.Errorf("issue the administrator's certificate: %w", err)
	}
	if err := ca.Issue("admin@"+hostName(), nil, cert, key); err != nil {
		return fmt.Errorf("issue the administrator's certificate: %w", err)
	}
	return nil
}

// freePort returns a loopback port free now for the matchmaker, which
// binds it later. It is taken below Linux's ephemeral range (32768 and
// up), so that the ports the system hands out meanwhile, to any
// process's outgoing connection or ":0" listener, cannot take it first.
func freePort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(32768-20000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startDetached starts the harrier command args in its own session, so
// that it outlives this command, logging to the pool's log directory as
// name and with its pid in pidPath.
func startDetached(dir, name, pidPath string, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "log", name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// waitReady waits until the agent answers and the matchmaker knows every
// startd's slots.
func waitReady(dir string, pc *poolConfig, startds int) error {
	client, closeFn, err := agentClient(pc)
	if err != nil {
		return err
	}
	defer closeFn()
	deadline := time.Now().Add(poolUpTimeout)
	var last error
	for time.Now().Before(deadline) {
		if err := deadDaemon(dir); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: "Machine"})
		cancel()
		if err == nil {
			machines := map[string]bool{}
			for _, ad := range reply.Ads {
				if i := strings.Index(ad, "Machine = \""); i >= 0 {
					rest := ad[i+len("Machine = \""):]
					machines[rest[:strings.IndexByte(rest, '"')]] = true
				}
			}
			if len(machines) >= startds {
				return nil
			}
			last = fmt.Errorf("%d of %d startds advertised", len(machines), startds)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the pool did not come up within %s: %v", poolUpTimeout, last)
}

// deadDaemon reports a daemon of the pool that has exited, with the end of
// its log.
func deadDaemon(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
	for _, f := range files {
		if pid := readPid(f); pid > 0 && exited(pid) {
			name := strings.TrimSuffix(filepath.Base(f), ".pid")
			log, _ := os.ReadFile(filepath.Join(dir, "log", name+".log"))
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			if len(lines) > 5 {
				lines = lines[len(lines)-5:]
			}
			return fmt.Errorf("%s exited:\n%s", name, strings.Join(lines, "\n"))
		}
	}
	return nil
}

// waitListening waits until something accepts connections at addr.
func waitListening(addr string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// exited reports whether process pid is gone (or a zombie). Unlike alive
// it does not look at what the process runs, so a daemon caught between
// fork and exec is not taken for dead.
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// alive reports whether pid is a running harrier process (not a zombie,
// not a recycled pid of some other program).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Contains(string(cmdline), "\x00daemon\x00") || strings.Contains(string(cmdline), "\x00master\x00")
}

// poolDown stops the pool: each simulated host's master, execute hosts
// first (a master stops its daemons, startds vacating their jobs, and
// exits), then any daemon still running without a master (started by
// hand, or by an older pool up). Each gets SIGTERM and, if it has not
// exited after a grace time, SIGKILL.
func poolDown(dir string, stdout io.Writer) error {
	files, _ := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
	if len(files) == 0 {
		fmt.Fprintf(stdout, "No pool is running in %s.\n", dir)
		return nil
	}
	// Masters first, the one with the matchmaker and agent last; then
	// daemons: startds, the agent, the matchmaker.
	central := map[string]bool{"master." + hostName(): true, "master." + hostName() + "-1": true}
	order := func(f string) int {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		switch {
		case central[name]:
			return 1
		case strings.HasPrefix(name, "master."):
			return 0
		case name == "agent":
			return 3
		case name == "matchmaker":
			return 4
		}
		return 2
	}
	for round := 0; round <= 4; round++ {
		for _, f := range files {
			if order(f) != round {
				continue
			}
			if pid := readPid(f); pid > 0 && alive(pid) {
				stopProcess(pid, time.Minute)
			}
			os.Remove(f)
		}
	}
	fmt.Fprintf(stdout, "Pool in %s is down.\n", dir)
	return nil
}

func stopProcess(pid int, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

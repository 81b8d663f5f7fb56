// Package master keeps a host's Harrier daemons running, as HTCondor's
// condor_master does: it starts them in order, restarts one that dies
// after a back-off that grows with its failures, restarts them all when
// their executable changes, and stops them in reverse order.
//
// The master runs one event loop; each daemon's process is watched by a
// goroutine that only reports its exit. The administrator's requests (Off,
// On, Restart, Reconfigure, Status) are carried out by that loop too, so
// they never race with a restart. Daemons get SIGTERM when the master
// dies (Pdeathsig), so none outlives it unsupervised: a master killed with
// SIGKILL takes its daemons down cleanly, and the next master starts them
// afresh.
package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Daemon is one daemon a master keeps running.
type Daemon struct {
	// Name names the daemon in logs and in its pid file ("agent",
	// "startd").
	Name string
	Argv []string
	// Log takes the daemon's standard output and error (appended).
	Log string
	// PidFile, if set, holds the pid of the daemon's current process.
	PidFile string
	// AdminSocket, if set, is the Unix socket where the daemon serves
	// the administrator (DaemonAdmin); the master passes requests on to
	// it.
	AdminSocket string
}

// Config is what a master runs and how.
type Config struct {
	// Host is the name of the host the master keeps, for the
	// administrator's tools.
	Host string
	// Daemons are started in this order and stopped in the reverse.
	Daemons []Daemon
	// Executable is watched every CheckExecInterval: when it changes
	// (and stays changed for one more check, so that a binary being
	// copied in is not started half-written) every daemon is restarted
	// on it. Empty: not watched.
	Executable        string
	CheckExecInterval time.Duration
	// A daemon that exits is started again after BackoffConstant +
	// BackoffFactor^n seconds (n: its restarts since it last ran
	// RecoverAfter without failing), at most BackoffCeiling.
	BackoffConstant time.Duration
	BackoffFactor   float64
	BackoffCeiling  time.Duration
	RecoverAfter    time.Duration
	// StopGrace is how long a daemon has to exit after SIGTERM before
	// SIGKILL.
	StopGrace time.Duration
	Logger    *slog.Logger
}

// DefaultConfig returns the defaults for everything but Daemons,
// Executable and Logger.
func DefaultConfig() Config {
	return Config{
		CheckExecInterval: 10 * time.Second,
		BackoffConstant:   time.Second,
		BackoffFactor:     2,
		BackoffCeiling:    5 * time.Minute,
		RecoverAfter:      time.Minute,
		StopGrace:         30 * time.Second,
	}
}

// Master supervises the daemons of one host.
type Master struct {
	cfg   Config
	procs []*proc
	// exits receives each process's end from its watcher.
	exits chan exit
	// restarts receives a daemon whose back-off is over.
	restarts chan *proc
	// requests carries the administrator's requests into the loop.
	requests chan func()
	// done is closed when Run returns; requests after that fail.
	done chan struct{}
	// peaceful lists the daemons that peaceful Offs have yet to see
	// stopped, in the order they stop (see advancePeaceful).
	peaceful []*proc
}

// proc is one daemon and its current process, if any.
type proc struct {
	d        Daemon
	cmd      *exec.Cmd // nil while not running
	done     chan struct{}
	started  time.Time
	failures int  // restarts since it last ran RecoverAfter
	restarts int  // starts after the first, for the administrator
	pending  bool // a restart is scheduled
	// off: the administrator turned it off; it is not started again
	// until turned on.
	off bool
	// removed: a reconfiguration took it out of the daemon list.
	removed bool
	// asked: turned off peacefully, it stops when its jobs have
	// finished.
	asked bool
}

type exit struct {
	p   *proc
	cmd *exec.Cmd
	err error
}

// New checks cfg and returns a master for it.
func New(cfg Config) (*Master, error) {
	if err := checkDaemons(cfg.Daemons); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// The channels are buffered for the most daemons a reconfiguration
	// may bring, so that a watcher never blocks the loop.
	m := &Master{cfg: cfg, exits: make(chan exit, maxDaemons), restarts: make(chan *proc, maxDaemons),
		requests: make(chan func()), done: make(chan struct{})}
	for _, d := range cfg.Daemons {
		m.procs = append(m.procs, &proc{d: d})
	}
	return m, nil
}

// maxDaemons bounds the daemons one master runs, over its lifetime's
// reconfigurations.
const maxDaemons = 64

// checkDaemons checks the daemon list of a configuration.
func checkDaemons(ds []Daemon) error {
	if len(ds) == 0 {
		return errors.New("master: no daemons to run")
	}
	if len(ds) > maxDaemons {
		return fmt.Errorf("master: %d daemons; at most %d", len(ds), maxDaemons)
	}
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Name == "" || len(d.Argv) == 0 {
			return fmt.Errorf("master: daemon %q has no name or command", d.Name)
		}
		if seen[d.Name] {
			return fmt.Errorf("master: daemon %q listed twice", d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// Run starts the daemons and keeps them running until ctx is done, then
// stops them in reverse order and returns.
func (m *Master) Run(ctx context.Context) error {
	defer close(m.done)
	log := m.cfg.Logger
	for _, p := range m.procs {
		m.start(p)
	}
	var exe, changed execState
	var check <-chan time.Time
	if m.cfg.Executable != "" {
		exe = statExec(m.cfg.Executable)
		t := time.NewTicker(m.cfg.CheckExecInterval)
		defer t.Stop()
		check = t.C
	}
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping daemons")
			m.stopAll()
			return nil
		case e := <-m.exits:
			p := e.p
			if p.cmd != e.cmd {
				continue // an old process, stopped on purpose
			}
			p.cmd = nil
			if p.off {
				// Turned off, it stopped by itself (peacefully, or it failed); it
				// stays off, and the peaceful Off goes on.
				m.cfg.Logger.Info("daemon stopped", "name", p.d.Name, "how", describeExit(e.err))
				if p.d.PidFile != "" {
					os.Remove(p.d.PidFile)
				}
				m.advancePeaceful()
				continue
			}
			m.scheduleRestart(p, e.err)
		case p := <-m.restarts:
			p.pending = false
			if p.cmd == nil && !p.off && !p.removed {
				m.start(p)
			}
		case f := <-m.requests:
			f()
		case <-check:
			now := statExec(m.cfg.Executable)
			switch {
			case now == exe:
				changed = execState{}
			case now != changed:
				changed = now // wait one more check for it to settle
			default:
				log.Info("executable changed; restarting daemons", "path", m.cfg.Executable)
				exe, changed = now, execState{}
				m.stopAll()
				for _, p := range m.procs {
					p.failures = 0
					if !p.off {
						m.start(p)
					}
				}
			}
		}
	}
}

// start starts daemon i; a daemon that cannot be started is retried
// after its back-off.
func (m *Master) start(p *proc) {
	if !p.started.IsZero() {
		p.restarts++
	}
	p.asked = false // a new process has not been asked to stop
	if err := p.start(); err != nil {
		m.scheduleRestart(p, err)
		return
	}
	m.cfg.Logger.Info("daemon started", "name", p.d.Name, "pid", p.cmd.Process.Pid)
	cmd, done := p.cmd, p.done
	go func() {
		err := cmd.Wait()
		close(done)
		m.exits <- exit{p: p, cmd: cmd, err: err}
	}()
}

func (p *proc) start() error {
	logf, err := os.OpenFile(p.d.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logf.Close() // the daemon has its own copy
	cmd := exec.Command(p.d.Argv[0], p.d.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a signal typed at the master's
	// terminal does not reach it past the master; SIGTERM if the master
	// dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	p.cmd, p.done, p.started = cmd, make(chan struct{}), time.Now()
	if p.d.PidFile != "" {
		if err := writePid(p.d.PidFile, cmd.Process.Pid); err != nil {
			return err
		}
	}
	return nil
}

// scheduleRestart logs why p is not running and starts it again after
// its back-off.
func (m *Master) scheduleRestart(p *proc, why error) {
	if !p.started.IsZero() && time.Since(p.started) >= m.cfg.RecoverAfter {
		p.failures = 0
	}
	delay := m.backoff(p.failures)
	p.failures++
	m.cfg.Logger.Warn("daemon not running; restarting it after a back-off", "name", p.d.Name,
		"why", describeExit(why), "restarts", p.failures, "backoff", delay)
	if p.pending {
		return
	}
	p.pending = true
	time.AfterFunc(delay, func() {
		select {
		case m.restarts <- p:
		case <-m.done:
		}
	})
}

// backoff is the wait before a daemon's restart after n earlier ones.
func (m *Master) backoff(n int) time.Duration {
	d := m.cfg.BackoffConstant + time.Duration(math.Pow(m.cfg.BackoffFactor, float64(n))*float64(time.Second))
	if d > m.cfg.BackoffCeiling || d < 0 {
		return m.cfg.BackoffCeiling
	}
	return d
}

// stopAll stops every running daemon, the last started first.
func (m *Master) stopAll() {
	for i := len(m.procs) - 1; i >= 0; i-- {
		m.stop(m.procs[i])
	}
}

// stop stops p's process, if it runs: SIGTERM, and SIGKILL after
// StopGrace.
func (m *Master) stop(p *proc) { m.stopWith(p, syscall.SIGTERM) }

// stopWith is stop with sig in place of SIGTERM.
func (m *Master) stopWith(p *proc, sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	cmd := p.cmd
	p.cmd = nil // its exit is no reason to restart it
	_ = cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(m.cfg.StopGrace):
		m.cfg.Logger.Warn("daemon did not stop in time; killing it", "name", p.d.Name, "grace", m.cfg.StopGrace)
		_ = cmd.Process.Kill()
		<-p.done
	}
	m.cfg.Logger.Info("daemon stopped", "name", p.d.Name)
	if p.d.PidFile != "" {
		os.Remove(p.d.PidFile)
	}
}

// describeExit says how a process ended, in words for the log.
func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return "exited with status " + strconv.Itoa(ee.ExitCode())
	}
	if err == nil {
		return "exited with status 0"
	}
	return err.Error()
}

// execState identifies a version of the executable.
type execState struct {
	ino, size int64
	mtime     time.Time
	missing   bool
}

func statExec(path string) execState {
	fi, err := os.Stat(path)
	if err != nil {
		return execState{missing: true}
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino int64
	if st != nil {
		ino = int64(st.Ino)
	}
	return execState{ino: ino, size: fi.Size(), mtime: fi.ModTime()}
}

func writePid(path string, pid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// PidFile is where a pool keeps the pid of the process named name.
func PidFile(runDir, name string) string { return filepath.Join(runDir, name+".pid") }

package master

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// ErrStopped is returned by a request made after Run has returned.
var ErrStopped = errors.New("master: stopped")

// ErrNoDaemon is returned for a request naming a daemon the master does
// not run.
var ErrNoDaemon = errors.New("master: no such daemon")

// DaemonStatus is what the master knows of one of its daemons.
type DaemonStatus struct {
	Name string
	// Pid is its current process, 0 if it is not running.
	Pid int
	// Started is when its current (or last) process started.
	Started time.Time
	// Restarts counts its starts after the first.
	Restarts int
	// Off: the administrator turned it off.
	Off bool
}

// do runs f in the master's loop and waits for it.
func (m *Master) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case m.requests <- func() { f(); close(done) }:
	case <-m.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once taken, the request runs to its end: stopping a daemon is not
	// abandoned half way.
	<-done
	return nil
}

// selected returns the daemons named name, or all of them if name is
// empty, in start order.
func (m *Master) selected(name string) ([]*proc, error) {
	if name == "" {
		return m.procs, nil
	}
	for _, p := range m.procs {
		if p.d.Name == name {
			return []*proc{p}, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrNoDaemon, name)
}

// StopMode is how Off stops daemons, as condor_off's -graceful, -peaceful
// and -fast say.
type StopMode int

const (
	// Graceful sends SIGTERM (SIGKILL after StopGrace): a startd
	// vacates its jobs, checkpointed where they can be, to run again
	// elsewhere.
	Graceful StopMode = iota
	// Peaceful asks each daemon that can (a startd, on its
	// administrator's socket) to stop once its running jobs have
	// finished, starting none, and does not wait for it; the daemons
	// named that cannot are stopped gracefully after those have gone,
	// in the usual order. A master that stops meanwhile stops them all
	// as it always does.
	Peaceful
	// Fast sends SIGQUIT (SIGKILL after StopGrace): a startd kills its
	// jobs at once, and they run again from their last checkpoint or
	// from the start.
	Fast
)

// Off stops the daemon named name (every daemon if name is empty, the
// last started first) in mode and keeps it stopped until On. It returns
// the names of the daemons it turned off, and of those that still run:
// turned off peacefully, they stop when their jobs have finished.
func (m *Master) Off(ctx context.Context, name string, mode StopMode) (off, stopping []string, err error) {
	off, err = m.each(ctx, name, func(ps []*proc) {
		for _, p := range slices.Backward(ps) {
			p.off = true
			switch mode {
			case Peaceful:
				m.peaceful = append(m.peaceful, p)
			case Fast:
				m.stopWith(p, syscall.SIGQUIT)
				m.cfg.Logger.Info("daemon turned off", "name", p.d.Name, "mode", "fast")
			default:
				m.stop(p)
				m.cfg.Logger.Info("daemon turned off", "name", p.d.Name)
			}
		}
		m.advancePeaceful()
		for _, p := range ps {
			if p.cmd != nil {
				stopping = append(stopping, p.d.Name)
			}
		}
	})
	return off, stopping, err
}

// advancePeaceful carries peaceful stops forward, in order: it asks the
// first daemon still to stop to do so once its jobs have finished, and
// waits for its exit (Run calls it again then); a daemon that cannot is
// stopped gracefully now. It runs in the master's loop.
func (m *Master) advancePeaceful() {
	for len(m.peaceful) > 0 {
		p := m.peaceful[0]
		switch {
		case !p.off || p.cmd == nil: // turned on again, or gone
			p.asked = false
			m.peaceful = m.peaceful[1:]
		case p.asked:
			return
		case m.askPeaceful(p):
			p.asked = true
			m.cfg.Logger.Info("daemon turned off; it stops once its jobs have finished", "name", p.d.Name, "mode", "peaceful")
			return
		default:
			m.stop(p)
			m.cfg.Logger.Info("daemon turned off", "name", p.d.Name, "mode", "peaceful")
		}
	}
}

// askPeaceful asks p, on its administrator's socket, to stop once its
// jobs have finished; it reports whether p will.
func (m *Master) askPeaceful(p *proc) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := callDaemon(ctx, p.d, func(ctx context.Context, c wire.DaemonAdminClient) error {
		_, err := c.StopPeacefully(ctx, &wire.StopPeacefullyRequest{})
		return err
	})
	if err != nil && status.Code(err) != codes.Unimplemented {
		m.cfg.Logger.Warn("daemon does not answer a peaceful stop; stopping it gracefully", "name", p.d.Name, "err", err)
	}
	return err == nil
}

// On starts the daemon named name (every daemon if name is empty) if it
// is not running, and lets the master restart it again when it dies.
func (m *Master) On(ctx context.Context, name string) ([]string, error) {
	return m.each(ctx, name, func(ps []*proc) {
		for _, p := range ps {
			p.off = false
			p.failures = 0
			if p.cmd == nil {
				m.start(p)
			}
		}
	})
}

// Restart stops the daemon named name (every daemon if name is empty)
// and starts it again at once, whether or not it was off.
func (m *Master) Restart(ctx context.Context, name string) ([]string, error) {
	return m.each(ctx, name, func(ps []*proc) {
		for _, p := range slices.Backward(ps) {
			m.stop(p)
		}
		for _, p := range ps {
			p.off = false
			p.failures = 0
			m.start(p)
		}
	})
}

// each runs fn in the master's loop on the daemons named name (every
// daemon if name is empty, in start order) and returns their names.
func (m *Master) each(ctx context.Context, name string, fn func([]*proc)) ([]string, error) {
	var names []string
	var err error
	if derr := m.do(ctx, func() {
		var ps []*proc
		if ps, err = m.selected(name); err != nil {
			return
		}
		fn(ps)
		for _, p := range ps {
			names = append(names, p.d.Name)
		}
	}); derr != nil {
		return nil, derr
	}
	return names, err
}

// Status reports every daemon, in start order.
func (m *Master) Status(ctx context.Context) ([]DaemonStatus, error) {
	var st []DaemonStatus
	err := m.do(ctx, func() {
		for _, p := range m.procs {
			s := DaemonStatus{Name: p.d.Name, Started: p.started, Restarts: p.restarts, Off: p.off}
			if p.cmd != nil {
				s.Pid = p.cmd.Process.Pid
			}
			st = append(st, s)
		}
	})
	return st, err
}

// Reconfigure takes a new configuration, as from a re-read configuration
// file: the new timings apply from now on; daemons no longer listed are
// stopped; newly listed ones are started; a listed daemon whose command
// changed gets it at its next start. Every daemon still running is then
// sent SIGHUP, so that it re-reads the configuration itself. The
// executable watched is not changed.
func (m *Master) Reconfigure(ctx context.Context, cfg Config) error {
	if err := checkDaemons(cfg.Daemons); err != nil {
		return err
	}
	return m.do(ctx, func() {
		old := map[string]*proc{}
		for _, p := range m.procs {
			old[p.d.Name] = p
		}
		var procs, fresh []*proc
		for _, d := range cfg.Daemons {
			p, ok := old[d.Name]
			if !ok {
				p = &proc{d: d}
				fresh = append(fresh, p)
			}
			p.d = d
			delete(old, d.Name)
			procs = append(procs, p)
		}
		for _, p := range slices.Backward(m.procs) {
			if _, gone := old[p.d.Name]; gone {
				p.removed = true
				m.stop(p)
				m.cfg.Logger.Info("daemon no longer configured; stopped", "name", p.d.Name)
			}
		}
		m.procs = procs
		m.cfg.BackoffConstant, m.cfg.BackoffFactor = cfg.BackoffConstant, cfg.BackoffFactor
		m.cfg.BackoffCeiling, m.cfg.RecoverAfter = cfg.BackoffCeiling, cfg.RecoverAfter
		m.cfg.StopGrace = cfg.StopGrace
		for _, p := range m.procs {
			if p.cmd != nil {
				_ = p.cmd.Process.Signal(syscall.SIGHUP)
			}
		}
		for _, p := range fresh {
			m.start(p)
		}
		m.cfg.Logger.Info("reconfigured", "daemons", len(m.procs))
	})
}

// configured returns the daemons named name (every daemon if name is
// empty) as configured.
func (m *Master) configured(ctx context.Context, name string) ([]Daemon, error) {
	var ds []Daemon
	var err error
	if derr := m.do(ctx, func() {
		var ps []*proc
		if ps, err = m.selected(name); err != nil {
			return
		}
		for _, p := range ps {
			ds = append(ds, p.d)
		}
	}); derr != nil {
		return nil, derr
	}
	return ds, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/wire"
)

// runShadow is the shadow process the agent starts for each claim it
// runs jobs under. It reads the jobs and commands about them on stdin and
// reports events on stdout. When stdin ends the agent is done with the
// claim or gone, and a job still running is stopped: no job runs without
// its agent.
func runShadow(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "shadow")
	events := childproc.NewSender[shadow.Event](stdout)
	report := func(ev shadow.Event) {
		if err := events.Send(ev); err != nil {
			logger.Error("report to agent", "err", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shadow.Serve(ctx, stdin, logger, report)
	return nil
}

// runStarter is the starter process a startd starts for a job, and keeps
// for the claim's next jobs when the spec says it may (Spec.Reusable). The
// startd steers it with starter.Commands on stdin (the job, then suspend,
// continue, vacate, kill) and hears of each job's end as a starter.Event on
// stdout. SIGTERM or SIGINT, from whoever sends them, stop the job at once.
func runStarter(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "starter")
	commands := childproc.NewReceiver[starter.Command](stdin)
	first, err := commands.Receive()
	if err != nil {
		return fmt.Errorf("read the first job: %w", err)
	}
	if first.Job == nil {
		return errors.New("read the first job: the startd sent a command before any job")
	}
	spec := first.Job
	if err := spec.Check(); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	runner := chooseRunner(spec, logger)
	sandbox := spec.Sandbox // as chooseRunner settled it

	var current atomic.Pointer[starter.Starter]
	// stop is closed by the first vacate or kill: the starter takes no
	// further job, and goes at once if it has none. specs carries the
	// claim's next jobs; it is closed at the end of the input.
	stop := make(chan struct{})
	specs := make(chan *starter.Spec, 1)
	go func() {
		defer close(specs)
		var once sync.Once
		for {
			c, err := commands.Receive()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					logger.Error("startd commands", "err", err)
				}
				return
			}
			if c.Vacate || c.Kill {
				once.Do(func() { close(stop) })
			}
			if c.Kill {
				cancel()
			}
			if c.Job != nil {
				specs <- c.Job
				continue
			}
			// A command for a job that has ended does nothing: the next
			// job becomes current only when it starts.
			s := current.Load()
			if s == nil {
				continue
			}
			switch {
			case c.Suspend:
				s.Suspend()
			case c.Continue:
				s.Continue()
			case c.Vacate:
				s.Vacate()
			}
		}
	}()
	events := childproc.NewSender[starter.Event](stdout)
	// The claim's jobs usually come from one shadow, which keeps its
	// address and session certificate: one connection serves them all.
	var (
		conn     *grpc.ClientConn
		connAddr string
		connFP   string
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		if conn == nil || connAddr != spec.ShadowAddr || connFP != spec.ShadowFingerprint {
			if conn != nil {
				conn.Close()
			}
			tlsCfg, err := pki.PinnedClientConfig(spec.CertFile, spec.KeyFile, spec.ShadowFingerprint)
			if err != nil {
				return fmt.Errorf("starter TLS: %w", err)
			}
			if conn, err = wire.Dial(spec.ShadowAddr, tlsCfg); err != nil {
				return err
			}
			connAddr, connFP = spec.ShadowAddr, spec.ShadowFingerprint
		}
		s := starter.New(spec, conn, runner, logger)
		current.Store(s)
		if err := s.Run(ctx); err != nil {
			return err
		}
		current.Store(nil)
		select {
		case <-stop:
			return nil
		default:
		}
		if !spec.Reusable || ctx.Err() != nil {
			return nil
		}
		if err := events.Send(starter.Event{Type: starter.EventEnded}); err != nil {
			return fmt.Errorf("report the job's end to the startd: %w", err)
		}
		var ok bool
		select {
		case spec, ok = <-specs:
		case <-stop:
			return nil
		}
		if !ok {
			return nil // the claim is over
		}
		if err := spec.Check(); err != nil {
			return err
		}
		spec.Sandbox = sandbox
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"google.golang.org/grpc"

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
	var mu sync.Mutex
	report := func(ev shadow.Event) {
		mu.Lock()
		defer mu.Unlock()
		if err := shadow.Write(stdout, ev); err != nil {
			logger.Error("report to agent", "err", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shadow.Serve(ctx, stdin, logger, report)
	return nil
}

// runStarter is the starter process a startd starts for a job, and keeps
// for the claim's next jobs when the spec says it may (Spec.Reusable): the
// next job's spec then follows on stdin, after the starter has written a
// line on stdout to say the previous job has ended. The startd steers it
// with signals: SIGUSR1 suspends the job, SIGUSR2 continues it, SIGTERM
// vacates it (the job is stopped and runs again elsewhere) and SIGINT
// kills it at once; after SIGTERM or SIGINT the starter takes no further
// job.
func runStarter(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "starter")
	dec := json.NewDecoder(stdin)
	spec, err := starter.ReadSpec(dec)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT)
	defer cancel()
	runner := chooseRunner(spec, logger)
	sandbox := spec.Sandbox // as chooseRunner settled it

	var (
		mu      sync.Mutex
		current *starter.Starter
	)
	// stop is closed by the first SIGTERM or SIGINT: the starter takes no
	// further job, and goes at once if it has none.
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		var once sync.Once
		for sig := range sigs {
			mu.Lock()
			s := current
			mu.Unlock()
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				once.Do(func() { close(stop) })
			}
			if s == nil {
				continue // no job yet: stop is all there is to do
			}
			switch sig {
			case syscall.SIGUSR1:
				s.Suspend()
			case syscall.SIGUSR2:
				s.Continue()
			case syscall.SIGTERM:
				s.Vacate()
			}
		}
	}()
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
	// The next job's spec comes once the previous job's end is reported.
	type next struct {
		spec *starter.Spec
		err  error
	}
	specs := make(chan next)
	go func() {
		for {
			s, err := starter.ReadSpec(dec)
			specs <- next{s, err}
			if err != nil {
				return
			}
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
		mu.Lock()
		current = s
		mu.Unlock()
		if err := s.Run(ctx); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		default:
		}
		if !spec.Reusable || ctx.Err() != nil {
			return nil
		}
		if _, err := io.WriteString(stdout, "ended\n"); err != nil {
			return fmt.Errorf("report the job's end to the startd: %w", err)
		}
		var n next
		select {
		case n = <-specs:
		case <-stop:
			return nil
		}
		if n.err != nil {
			if errors.Is(n.err, io.EOF) {
				return nil // the claim is over
			}
			return n.err
		}
		spec = n.spec
		spec.Sandbox = sandbox
	}
}

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
	tlsCfg, err := pki.ClientConfig(spec.CertFile, spec.KeyFile, spec.CAFile)
	if err != nil {
		return fmt.Errorf("starter TLS: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT)
	defer stop()
	runner := chooseRunner(spec, logger)
	sandbox := spec.Sandbox // as chooseRunner settled it

	var (
		mu       sync.Mutex
		current  *starter.Starter
		stopping bool
	)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range sigs {
			mu.Lock()
			s := current
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				stopping = true
			}
			mu.Unlock()
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
	// address: one connection serves them all.
	var (
		conn     *grpc.ClientConn
		connAddr string
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		if conn == nil || connAddr != spec.ShadowAddr {
			if conn != nil {
				conn.Close()
			}
			if conn, err = wire.Dial(spec.ShadowAddr, tlsCfg); err != nil {
				return err
			}
			connAddr = spec.ShadowAddr
		}
		s := starter.New(spec, conn, runner, logger)
		mu.Lock()
		current = s
		mu.Unlock()
		if err := s.Run(ctx); err != nil {
			return err
		}
		mu.Lock()
		done := stopping || !spec.Reusable || ctx.Err() != nil
		mu.Unlock()
		if done {
			return nil
		}
		if _, err := io.WriteString(stdout, "ended\n"); err != nil {
			return fmt.Errorf("report the job's end to the startd: %w", err)
		}
		if spec, err = starter.ReadSpec(dec); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the claim is over
			}
			return err
		}
		spec.Sandbox = sandbox
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/starter"
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
	return shadow.Serve(ctx, stdin, logger, report)
}

// runStarter is the starter process a startd starts for each job. The
// startd steers it with signals: SIGUSR1 suspends the job, SIGUSR2
// continues it, SIGTERM vacates it (the job is stopped and runs again
// elsewhere) and SIGINT kills it at once.
func runStarter(_ []string, stdin io.Reader, _ io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "starter")
	spec, err := starter.ReadSpec(stdin)
	if err != nil {
		return err
	}
	tlsCfg, err := pki.ClientConfig(spec.CertFile, spec.KeyFile, spec.CAFile)
	if err != nil {
		return fmt.Errorf("starter TLS: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT)
	defer stop()
	s := starter.New(spec, tlsCfg, chooseRunner(spec, logger), logger)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
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
	return s.Run(ctx)
}

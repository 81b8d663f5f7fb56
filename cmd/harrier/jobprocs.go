package main

import (
	"context"
	"encoding/json"
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

// runShadow is the shadow process the agent starts for each running job. It
// reads its spec and then commands on stdin and reports events on stdout.
// When stdin ends the agent is gone, and the job is stopped: no job runs
// without its agent.
func runShadow(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "shadow")
	dec := json.NewDecoder(stdin)
	spec, err := shadow.ReadSpec(dec)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	report := func(ev shadow.Event) {
		mu.Lock()
		defer mu.Unlock()
		if err := shadow.Write(stdout, ev); err != nil {
			logger.Error("report to agent", "err", err)
		}
	}
	s, err := shadow.New(spec, logger, report)
	if err != nil {
		report(shadow.Event{Type: shadow.EventFailed, Reason: err.Error()})
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		for {
			var c shadow.Command
			if err := dec.Decode(&c); err != nil {
				s.Kill("the agent went away")
				return
			}
			if c.Kill {
				s.Kill(c.Reason)
			}
			if c.Checkpoint {
				s.Checkpoint(c.Vacate)
			}
		}
	}()
	return s.Run(ctx)
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

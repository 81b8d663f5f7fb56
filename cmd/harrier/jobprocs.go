package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/starter"
)

// runShadowProcess is the shadow process the agent starts for each claim it
// runs jobs under (see shadow.ServeClaim): it reads the jobs and commands
// about them on stdin and reports events on stdout. When stdin ends the agent is done with the
// claim or gone, and a job still running is stopped: no job runs without
// its agent.
func runShadowProcess(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "shadow")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shadow.ServeClaim(ctx, stdin, stdout, logger)
	return nil
}

// runStarterProcess is the starter process a startd starts for a job, and keeps
// for the claim's next jobs when the spec says it may (Spec.Reusable): see
// starter.ServeClaim. SIGTERM or SIGINT, from whoever sends them, stop the
// job at once; the startd itself steers the starter with commands.
func runStarterProcess(_ []string, stdin io.Reader, stdout io.Writer) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "starter")
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	return starter.ServeClaim(ctx, stdin, stdout, func(spec *starter.Spec) starter.Runner {
		return chooseRunner(spec, logger)
	}, logger)
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/metrics"
)

// metricsKeys are the configuration keys that set where a daemon of
// subsystem (MATCHMAKER, AGENT, STARTD, MASTER) serves its metrics.
func metricsKeys(subsys string) []string { return subsysKeys(subsys, "METRICS_ADDRESS") }

// profilingKeys are the configuration keys that turn on Go's profiles
// (/debug/pprof/) beside a daemon of subsys's metrics: its own, then the
// pool's.
func profilingKeys(subsys string) []string { return subsysKeys(subsys, "PROFILING") }

// profiling reports whether the daemon of subsys serves Go's profiles
// with its metrics; they are off unless configured.
func profiling(pc *poolConfig, subsys string) (bool, error) {
	for _, k := range profilingKeys(subsys) {
		if _, ok := pc.c.Lookup(k); ok {
			return pc.c.Bool(k, false)
		}
	}
	return false, nil
}

// metricsFile is where the daemon name writes the address it serves its
// metrics on.
func metricsFile(runDir, name string) string { return addressFile(runDir, name, "metrics") }

// serveMetrics serves reg at /metrics on the address configured for
// subsys until ctx is done, writing the address to name's metrics file
// (and removing it when it stops). It returns at once, having started
// the server in wg, or with the error of a listen that failed.
func serveMetrics(ctx context.Context, pc *poolConfig, subsys, name string, reg *prometheus.Registry, wg waitGroup, logger *slog.Logger) error {
	addr := httpAddress(pc, subsys, "METRICS_ADDRESS")
	if addr == "" {
		return nil
	}
	prof, err := profiling(pc, subsys)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	file := metricsFile(runDirOf(pc), name)
	lis, err := listenAnnounced(addr, file)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	logger.Info("metrics served", "url", "http://"+lis.Addr().String()+"/metrics")
	wg.Go(func() {
		defer os.Remove(file)
		if err := serveHTTP(ctx, lis, metrics.Handler(reg, prof, logger), logger); err != nil {
			logger.Error("metrics", "err", err)
		}
	})
	return nil
}

// waitGroup is what serveMetrics needs of a sync.WaitGroup.
type waitGroup interface{ Go(func()) }

// poolMetrics lists the metrics addresses the daemons under runDir wrote,
// by daemon name.
func poolMetrics(runDir string) []string { return poolAddresses(runDir, "metrics", "/metrics") }

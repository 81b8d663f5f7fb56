package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/metrics"
)

// defaultMetricsAddress is where a daemon serves /metrics unless
// configured otherwise: on loopback, on a port of its own choosing,
// which it writes to the RUN directory (see metricsFile) and logs.
const defaultMetricsAddress = "127.0.0.1:0"

// metricsKeys are the configuration keys that set where a daemon of
// subsystem (MATCHMAKER, AGENT, STARTD, MASTER) serves its metrics: its
// own, then the pool's, as HTCondor's SUBSYS_ prefixes go.
func metricsKeys(subsys string) []string {
	return []string{subsys + "_METRICS_ADDRESS", "METRICS_ADDRESS"}
}

// metricsAddress is where the daemon of subsys serves its metrics, or ""
// if it serves none (the key set to "off" or empty).
func metricsAddress(pc *poolConfig, subsys string) string {
	for _, k := range metricsKeys(subsys) {
		if v, ok := pc.c.Lookup(k); ok {
			v = strings.TrimSpace(v)
			if strings.EqualFold(v, "off") {
				return ""
			}
			return v
		}
	}
	return defaultMetricsAddress
}

// profilingKeys are the configuration keys that turn on Go's profiles
// (/debug/pprof/) beside a daemon of subsys's metrics: its own, then the
// pool's.
func profilingKeys(subsys string) []string {
	return []string{subsys + "_PROFILING", "PROFILING"}
}

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
// metrics on, for harrier pool up and for the administrator.
func metricsFile(runDir, name string) string {
	return filepath.Join(runDir, name+".metrics")
}

// serveMetrics serves reg at /metrics on the address configured for
// subsys until ctx is done, writing the address to name's metrics file
// (and removing it when it stops). It returns at once, having started
// the server in wg, or with the error of a listen that failed.
func serveMetrics(ctx context.Context, pc *poolConfig, subsys, name string, reg *prometheus.Registry, wg waitGroup, logger *slog.Logger) error {
	addr := metricsAddress(pc, subsys)
	if addr == "" {
		return nil
	}
	prof, err := profiling(pc, subsys)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	file := metricsFile(runDirOf(pc), name)
	if err := os.WriteFile(file, []byte(lis.Addr().String()+"\n"), 0o644); err != nil {
		lis.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	logger.Info("metrics served", "url", "http://"+lis.Addr().String()+"/metrics")
	wg.Go(func() {
		defer os.Remove(file)
		if err := metrics.Serve(ctx, lis, reg, prof, logger); err != nil {
			logger.Error("metrics", "err", err)
		}
	})
	return nil
}

// waitGroup is what serveMetrics needs of a sync.WaitGroup.
type waitGroup interface{ Go(func()) }

// poolMetrics lists the metrics addresses the daemons under runDir wrote,
// by daemon name.
func poolMetrics(runDir string) []string {
	files, _ := filepath.Glob(filepath.Join(runDir, "*.metrics"))
	sort.Strings(files)
	var lines []string
	for _, f := range files {
		addr, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s http://%s/metrics", strings.TrimSuffix(filepath.Base(f), ".metrics"), strings.TrimSpace(string(addr))))
	}
	return lines
}

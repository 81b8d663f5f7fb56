package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"harrier.dev/harrier/timeseries"
	"harrier.dev/harrier/web"
)

// defaultWebAddress is where the matchmaker and the agent serve their
// status pages unless configured otherwise: on loopback, since anyone
// who reaches the address sees the pool's users and jobs, on a port of
// the daemon's choosing, which it writes to the RUN directory (see
// webFile) and logs.
const defaultWebAddress = "127.0.0.1:0"

// webKeys are the configuration keys that set where the daemon of subsys
// (MATCHMAKER, AGENT) serves its status pages: its own, then the pool's.
func webKeys(subsys string) []string {
	return []string{subsys + "_WEB_ADDRESS", "WEB_ADDRESS"}
}

// webAddress is where the daemon of subsys serves its status pages, or ""
// if it serves none (the key set to "off" or empty).
func webAddress(pc *poolConfig, subsys string) string {
	for _, k := range webKeys(subsys) {
		if v, ok := pc.c.Lookup(k); ok {
			v = strings.TrimSpace(v)
			if strings.EqualFold(v, "off") {
				return ""
			}
			return v
		}
	}
	return defaultWebAddress
}

// webFile is where the daemon name writes the address of its status
// pages, for harrier pool up and for the administrator.
func webFile(runDir, name string) string {
	return filepath.Join(runDir, name+".web")
}

// statusPages is what a daemon shows on its status pages: its history's
// series, how to sample them, where it keeps them, and its pages.
type statusPages struct {
	series      []string
	sample      func() []float64
	historyFile string
	pages       func(*timeseries.Store) http.Handler
}

// serveWeb serves the daemon's status pages on the address configured
// for subsys until ctx is done, and keeps their history, sampled every
// interval, in sp.historyFile. It writes the address to name's web file
// (removing it when it stops). It returns at once with a function that
// waits for the server and the history to stop, or with the error of a
// listen that failed. A history file that cannot be read is logged and
// a new history started.
func serveWeb(ctx context.Context, pc *poolConfig, subsys, name string, interval time.Duration, sp statusPages, logger *slog.Logger) (wait func(), err error) {
	addr := webAddress(pc, subsys)
	if addr == "" {
		return func() {}, nil
	}
	history, err := timeseries.Load(sp.historyFile, sp.series, timeseries.DefaultResolutions)
	if errors.Is(err, timeseries.ErrCorrupt) {
		logger.Error("status history lost; starting a new one", "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("status pages: %w", err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status pages: listen on %s: %w", addr, err)
	}
	file := webFile(runDirOf(pc), name)
	if err := os.WriteFile(file, []byte(lis.Addr().String()+"\n"), 0o644); err != nil {
		lis.Close()
		return nil, fmt.Errorf("status pages: %w", err)
	}
	logger.Info("status pages served", "url", "http://"+lis.Addr().String()+"/")
	var wg sync.WaitGroup
	wg.Go(func() {
		defer os.Remove(file)
		if err := web.Serve(ctx, lis, sp.pages(history), logger); err != nil {
			logger.Error("status pages", "err", err)
		}
	})
	wg.Go(func() { web.KeepHistory(ctx, history, interval, sp.sample, sp.historyFile, logger) })
	return wg.Wait, nil
}

// poolWeb lists the status pages' addresses the daemons under runDir
// wrote, by daemon name.
func poolWeb(runDir string) []string {
	files, _ := filepath.Glob(filepath.Join(runDir, "*.web"))
	sort.Strings(files)
	var lines []string
	for _, f := range files {
		addr, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s http://%s/", strings.TrimSuffix(filepath.Base(f), ".web"), strings.TrimSpace(string(addr))))
	}
	return lines
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"harrier.dev/harrier/timeseries"
	"harrier.dev/harrier/web"
)

// webKeys are the configuration keys that set where the daemon of subsys
// (MATCHMAKER, AGENT) serves its status pages. Anyone who reaches the
// address sees the pool's users and jobs: the default is loopback.
func webKeys(subsys string) []string { return subsysKeys(subsys, "WEB_ADDRESS") }

// webFile is where the daemon name writes the address of its status
// pages.
func webFile(runDir, name string) string { return addressFile(runDir, name, "web") }

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
	addr := httpAddress(pc, subsys, "WEB_ADDRESS")
	if addr == "" {
		return func() {}, nil
	}
	history, err := timeseries.Load(sp.historyFile, sp.series, timeseries.DefaultResolutions)
	if errors.Is(err, timeseries.ErrCorrupt) {
		logger.Error("status history lost; starting a new one", "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("status pages: %w", err)
	}
	file := webFile(runDirOf(pc), name)
	lis, err := listenAnnounced(addr, file)
	if err != nil {
		return nil, fmt.Errorf("status pages: %w", err)
	}
	logger.Info("status pages served", "url", "http://"+lis.Addr().String()+"/")
	var wg sync.WaitGroup
	wg.Go(func() {
		defer os.Remove(file)
		if err := serveHTTP(ctx, lis, sp.pages(history), logger); err != nil {
			logger.Error("status pages", "err", err)
		}
	})
	wg.Go(func() { web.KeepHistory(ctx, history, interval, sp.sample, sp.historyFile, logger) })
	return wg.Wait, nil
}

// poolWeb lists the status pages' addresses the daemons under runDir
// wrote, by daemon name.
func poolWeb(runDir string) []string { return poolAddresses(runDir, "web", "/") }

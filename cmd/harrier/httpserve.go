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
	"time"
)

// A daemon's HTTP endpoints (its metrics, its status pages) are each
// configured by a SUBSYS_SETTING key, else the pool's SETTING, as
// HTCondor's SUBSYS_ prefixes go; each serves on loopback by default, on
// a port of the daemon's choosing, which it writes to a file in the RUN
// directory (NAME.EXT) for harrier pool up and the administrator.

// defaultHTTPAddress is where an endpoint listens unless configured:
// loopback only, on a port the daemon picks.
const defaultHTTPAddress = "127.0.0.1:0"

// subsysKeys are the keys that configure setting for a daemon of subsys:
// its own, then the pool's.
func subsysKeys(subsys, setting string) []string {
	return []string{subsys + "_" + setting, setting}
}

// httpAddress is the address setting gives the daemon of subsys, or ""
// if it serves nothing there (the key set to "off" or empty).
func httpAddress(pc *poolConfig, subsys, setting string) string {
	for _, k := range subsysKeys(subsys, setting) {
		if v, ok := pc.c.Lookup(k); ok {
			v = strings.TrimSpace(v)
			if strings.EqualFold(v, "off") {
				return ""
			}
			return v
		}
	}
	return defaultHTTPAddress
}

// addressFile is where the daemon name writes the address of its
// endpoint of kind ext ("metrics", "web").
func addressFile(runDir, name, ext string) string {
	return filepath.Join(runDir, name+"."+ext)
}

// listenAnnounced listens on addr and writes the address it got to file.
func listenAnnounced(addr, file string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if err := os.WriteFile(file, []byte(lis.Addr().String()+"\n"), 0o644); err != nil {
		lis.Close()
		return nil, err
	}
	return lis, nil
}

// poolAddresses lists the URLs of the endpoints of kind ext the daemons
// under runDir wrote, by daemon name, each ending in path.
func poolAddresses(runDir, ext, path string) []string {
	files, _ := filepath.Glob(filepath.Join(runDir, "*."+ext))
	sort.Strings(files)
	var lines []string
	for _, f := range files {
		addr, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s http://%s%s", strings.TrimSuffix(filepath.Base(f), "."+ext), strings.TrimSpace(string(addr)), path))
	}
	return lines
}

// serveHTTP serves h over plain HTTP on lis until ctx is done; then it
// closes the server and returns nil. It closes lis.
func serveHTTP(ctx context.Context, lis net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve(lis)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve %s: %w", lis.Addr(), err)
}

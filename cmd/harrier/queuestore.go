package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/pgqueue"
)

// The agent's job queue is kept by the store QUEUE_STORE names: embedded
// (the default: a log in SPOOL/queue) or postgres (the database QUEUE_DSN
// names, a libpq connection string or postgres:// URL).
const (
	storeEmbedded = "embedded"
	storePostgres = "postgres"
)

// openStore opens the job queue the configuration names, that of the
// agent called name: a database holds the queues of several agents.
func openStore(ctx context.Context, pc *poolConfig, spool, name string, logger *slog.Logger) (agent.Queue, error) {
	switch kind := strings.ToLower(pc.c.String("QUEUE_STORE", storeEmbedded)); kind {
	case storeEmbedded:
		dir := filepath.Join(spool, "queue")
		logger.Info("job queue", "store", kind, "dir", dir)
		return retryLocked(ctx, func() (agent.Queue, error) {
			q, err := jobqueue.Open(dir, jobqueue.Options{Logger: logger})
			if err != nil {
				return nil, err
			}
			return q, nil
		})
	case storePostgres:
		dsn, err := pc.require("QUEUE_DSN")
		if err != nil {
			return nil, err
		}
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("QUEUE_DSN: %w", err)
		}
		logger.Info("job queue", "store", kind, "database", pgqueue.Describe(cfg))
		return retryLocked(ctx, func() (agent.Queue, error) {
			q, err := pgqueue.Open(ctx, dsn, pgqueue.Options{Agent: name, Logger: logger})
			if err != nil {
				return nil, err
			}
			return q, nil
		})
	default:
		return nil, fmt.Errorf("QUEUE_STORE = %s: want %s or %s", kind, storeEmbedded, storePostgres)
	}
}

// retryLocked opens a store, waiting a little while another process still
// holds it: a killed agent's threads, or its database session, may take a
// moment to let go.
func retryLocked(ctx context.Context, open func() (agent.Queue, error)) (agent.Queue, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		q, err := open()
		if !errors.Is(err, jobqueue.ErrLocked) || time.Now().After(deadline) {
			return q, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dsnPassword finds the password of a connection string in key=value form.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// redactDSN hides the password of a connection string or URL, for
// config-val and messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return dsnPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// dsnHasPassword reports whether a connection string or URL holds a
// password.
func dsnHasPassword(dsn string) bool { return redactDSN(dsn) != dsn }

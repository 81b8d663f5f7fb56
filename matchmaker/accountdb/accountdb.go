// Package accountdb keeps the matchmaker's accountant — users' priorities,
// usage and run-time priority factors — in a PostgreSQL database, which
// may be the one the agents keep their job queues in, so that SQL answers
// who has used what (the view user_priorities). Its rows carry the pool's
// name: pools may share a database.
package accountdb

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"harrier.dev/harrier/internal/pgschema"
	"harrier.dev/harrier/matchmaker"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var schema = pgschema.Schema{
	Files:        migrationFiles,
	Dir:          "migrations",
	VersionTable: "accountant_schema_version",
	Lock:         0x4861727269657241, // "HarrierA"
}

// timeout bounds each load or save, connecting included.
const timeout = 30 * time.Second

// Store is a pool's accountant in a database: a
// [matchmaker.AccountantStore]. Each Load and Save connects anew, so that
// a database that went away and came back needs nothing done; a Save that
// fails leaves the previous state saved, and the matchmaker saves again
// later.
type Store struct {
	cfg  *pgx.ConnConfig
	pool string
}

// Open checks that the database named by dsn (a libpq connection string
// or postgres:// URL) can be reached and brings its accountant tables up
// to date. pool names the pool whose accountant it keeps.
func Open(ctx context.Context, dsn, pool string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("accountant database: %w", err)
	}
	s := &Store{cfg: cfg, pool: pool}
	err = s.with(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := schema.Migrate(ctx, conn, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("accountant database: %w", err)
	}
	return s, nil
}

// with runs fn on a connection of its own.
func (s *Store) with(ctx context.Context, fn func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(ctx, conn)
}

// Load implements [matchmaker.AccountantStore].
func (s *Store) Load() (st matchmaker.AccountantState, ok bool, err error) {
	err = s.with(context.Background(), func(ctx context.Context, conn *pgx.Conn) error {
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		var last pgtype.Timestamptz
		err = tx.QueryRow(ctx, "SELECT last_update FROM accountant_clock WHERE pool = $1", s.pool).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		st = matchmaker.AccountantState{Last: last.Time, Factors: map[string]float64{}, Users: map[string]matchmaker.AccountState{}}
		var user string
		var u matchmaker.AccountState
		var seconds float64
		var lastUsage pgtype.Timestamptz
		rows, _ := tx.Query(ctx, `SELECT username, real_priority, factor, in_use, usage_seconds, last_usage
			FROM accountant_users WHERE pool = $1`, s.pool)
		if _, err := pgx.ForEachRow(rows, []any{&user, &u.Real, &u.Factor, &u.InUse, &seconds, &lastUsage}, func() error {
			u.Accumulated = time.Duration(seconds * float64(time.Second))
			u.LastUsage = lastUsage.Time
			st.Users[user] = u
			return nil
		}); err != nil {
			return err
		}
		var f float64
		rows, _ = tx.Query(ctx, "SELECT username, factor FROM accountant_factors WHERE pool = $1", s.pool)
		if _, err := pgx.ForEachRow(rows, []any{&user, &f}, func() error {
			st.Factors[user] = f
			return nil
		}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return matchmaker.AccountantState{}, false, fmt.Errorf("load accountant from %s: %w", describe(s.cfg), err)
	}
	return st, ok, nil
}

// Save implements [matchmaker.AccountantStore], in one transaction.
func (s *Store) Save(st matchmaker.AccountantState) error {
	err := s.with(context.Background(), func(ctx context.Context, conn *pgx.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		var b pgx.Batch
		b.Queue("DELETE FROM accountant_users WHERE pool = $1", s.pool)
		b.Queue("DELETE FROM accountant_factors WHERE pool = $1", s.pool)
		b.Queue(`INSERT INTO accountant_clock (pool, last_update, saved_at) VALUES ($1, $2, now())
			ON CONFLICT (pool) DO UPDATE SET last_update = excluded.last_update, saved_at = excluded.saved_at`,
			s.pool, timestamp(st.Last))
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		var users [][]any
		for name, u := range st.Users {
			users = append(users, []any{s.pool, name, u.Real, u.Factor, u.InUse, u.Accumulated.Seconds(), timestamp(u.LastUsage)})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"accountant_users"},
			[]string{"pool", "username", "real_priority", "factor", "in_use", "usage_seconds", "last_usage"}, pgx.CopyFromRows(users)); err != nil {
			return err
		}
		var factors [][]any
		for name, f := range st.Factors {
			factors = append(factors, []any{s.pool, name, f})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"accountant_factors"}, []string{"pool", "username", "factor"}, pgx.CopyFromRows(factors)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return fmt.Errorf("save accountant in %s: %w", describe(s.cfg), err)
	}
	return nil
}

// timestamp is t for a timestamptz column, NULL for the zero time.
func timestamp(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// describe names the database for messages, never with its password.
func describe(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s/%s", cfg.User, cfg.Host, cfg.Database)
}

var _ matchmaker.AccountantStore = (*Store)(nil)

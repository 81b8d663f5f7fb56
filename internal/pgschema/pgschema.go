// Package pgschema brings a PostgreSQL database's schema up to date from
// migrations versioned in the repository: files NNNN_what.sql, each taking
// the schema from version NNNN-1 to NNNN. A released file is never
// changed; a change of schema is a new file.
package pgschema

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Schema is one sequence of migrations and where a database records those
// applied.
type Schema struct {
	// Files holds the migrations, Dir/NNNN_what.sql.
	Files fs.FS
	Dir   string
	// VersionTable lists the migrations applied to a database.
	VersionTable string
	// Lock is the key of the transaction-level advisory lock that keeps
	// two programs starting at once from applying a migration twice.
	Lock int64
}

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the migrations in order of version, and checks that
// the versions run 1, 2, … without a gap.
func (s Schema) migrations() ([]migration, error) {
	names, err := fs.Glob(s.Files, path.Join(s.Dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name is not NNNN_what.sql", base)
		}
		b, err := fs.ReadFile(s.Files, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// Migrate brings the database's schema up to the newest version, in one
// transaction, recording each migration applied. A database already there
// is left alone; one at a version newer than this program knows is
// refused. settings are set for the transaction (set_config), for
// migrations that read them with current_setting. It returns the number
// of migrations applied.
func (s Schema) Migrate(ctx context.Context, conn *pgx.Conn, settings map[string]string) (applied int, err error) {
	ms, err := s.migrations()
	if err != nil {
		return 0, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", s.Lock); err != nil {
		return 0, err
	}
	for name, value := range settings {
		if _, err := tx.Exec(ctx, "SELECT set_config($1, $2, true)", name, value); err != nil {
			return 0, err
		}
	}
	table := pgx.Identifier{s.VersionTable}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return 0, err
	}
	var have int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table).Scan(&have); err != nil {
		return 0, err
	}
	if have > len(ms) {
		return 0, fmt.Errorf("database schema is at version %d, newer than this harrier's %d", have, len(ms))
	}
	for _, m := range ms[have:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return 0, fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return 0, fmt.Errorf("migration %s: %w", m.name, err)
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit migrations: %w", err)
	}
	return applied, nil
}

// SQL returns the text of migration version, for tests that make a
// database as an older program left it.
func (s Schema) SQL(version int) (string, error) {
	ms, err := s.migrations()
	if err != nil {
		return "", err
	}
	if version < 1 || version > len(ms) {
		return "", fmt.Errorf("no migration %d", version)
	}
	return ms[version-1].sql, nil
}

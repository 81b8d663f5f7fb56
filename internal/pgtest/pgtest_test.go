package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServerStopsAndStarts: a database made on the server keeps what was
// committed across a stop and a start, and takes no connection between.
func TestServerStopsAndStarts(t *testing.T) {
	s := Start(t, Options{})
	db := s.NewDatabase(t)
	ctx := context.Background()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, s.DSN(db))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE t (x int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	if err := exec("SELECT 1"); err == nil {
		t.Error("connected to a stopped server")
	}
	s.Start(t)
	conn, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 7 {
		t.Errorf("after a restart: x = %d, %v; want 7", x, err)
	}
}

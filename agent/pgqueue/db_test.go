package pgqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/jobqueue/storetest"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/internal/pgtest"
)

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// openT opens agent@a's queue in dsn, or that of the agent named.
func openT(t *testing.T, dsn string, agent ...string) *Store {
	t.Helper()
	name := "agent@a"
	if len(agent) > 0 {
		name = agent[0]
	}
	s, err := Open(context.Background(), dsn, Options{Agent: name, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSchemaForQueries: what the store commits is in the tables as SQL
// sees it: a job's typed columns, its ad as JSON, the history, the
// reservations; and the migrations are applied once.
func TestSchemaForQueries(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.DSN(srv.NewDatabase(t))
	ctx := context.Background()
	s := openT(t, dsn)
	c, err := s.NextCluster(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	txn := storetest.Submission(c, 3)
	txn.UseCluster(c, "alice")
	if err := s.Commit(ctx, txn); err != nil {
		t.Fatal(err)
	}
	ad, _ := s.Get(jobqueue.JobID{Cluster: c, Proc: 1})
	ad.SetInt("JobStatus", 4)
	txn = &jobqueue.Txn{}
	txn.SetValue(jobqueue.JobID{Cluster: c, Proc: 0}, "JobStatus", classad.Int(2))
	txn.Retire(jobqueue.JobID{Cluster: c, Proc: 1}, ad)
	if err := s.Commit(ctx, txn); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextCluster(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	openT(t, dsn) // migrations already applied: nothing to do

	conn := connect(t, dsn)
	rows, _ := conn.Query(ctx, `SELECT format('%s.%s %s %s %s %s', cluster, proc, owner, status, ad->>'Out', ad->>'Requirements')
		FROM jobs ORDER BY cluster, proc`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	req := `/Expr((TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Memory >= RequestMemory))/`
	want := []string{"1.0 alice 2 out.0 " + req, "1.2 alice 1 out.2 " + req}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("jobs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var hist string
	if err := conn.QueryRow(ctx, `SELECT format('%s.%s %s %s', cluster, proc, owner, status) FROM job_history`).Scan(&hist); err != nil || hist != "1.1 alice 4" {
		t.Errorf("job_history = %q, %v; want 1.1 alice 4", hist, err)
	}
	var resv string
	if err := conn.QueryRow(ctx, `SELECT string_agg(owner || ':' || cluster, ',') FROM cluster_reservations`).Scan(&resv); err != nil || resv != "bob:2" {
		t.Errorf("reservations = %q, %v; want bob:2", resv, err)
	}
	var versions string
	if err := conn.QueryRow(ctx, `SELECT string_agg(version || ' ' || name, ',' ORDER BY version) FROM schema_version`).Scan(&versions); err != nil || versions != "1 0001_queue.sql,2 0002_agents.sql,3 0003_views.sql" {
		t.Errorf("schema_version = %q, %v; want each migration once", versions, err)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer harrier is not
// opened by an older one.
func TestNewerSchemaRefused(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.DSN(srv.NewDatabase(t))
	openT(t, dsn).Close()
	conn := connect(t, dsn)
	if _, err := conn.Exec(context.Background(), `INSERT INTO schema_version (version, name) VALUES (99, '0099_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), dsn, Options{Agent: "agent@a"}); err == nil || !strings.Contains(err.Error(), "version 99") {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open of a newer schema = %v, want it refused", err)
	}
}

// TestDatabaseStopsAndReturns: while the server is down the store refuses
// commits with ErrUnavailable, applying nothing, and goes on answering
// from its copy; once the server is back commits succeed, and everything
// acknowledged before is there.
func TestDatabaseStopsAndReturns(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.DSN(srv.NewDatabase(t))
	ctx := context.Background()
	s := openT(t, dsn)
	if err := s.Commit(ctx, storetest.Submission(1, 5)); err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	var txn jobqueue.Txn
	txn.SetValue(jobqueue.JobID{Cluster: 1, Proc: 0}, "JobStatus", classad.Int(2))
	if err := s.Commit(ctx, &txn); !errors.Is(err, jobqueue.ErrUnavailable) {
		t.Errorf("Commit with the database down = %v, want ErrUnavailable", err)
	}
	if _, err := s.NextCluster(ctx, "alice"); !errors.Is(err, jobqueue.ErrUnavailable) {
		t.Errorf("NextCluster with the database down = %v, want ErrUnavailable", err)
	}
	if ad, ok := s.Get(jobqueue.JobID{Cluster: 1, Proc: 0}); !ok {
		t.Error("Get with the database down lost the job")
	} else if st, _ := ad.EvalInt("JobStatus"); st != 1 {
		t.Errorf("a refused commit was applied: JobStatus = %d", st)
	}
	if s.Len() != 5 {
		t.Errorf("Len with the database down = %d, want 5", s.Len())
	}
	if err := s.History(func(*classad.ClassAd) bool { return true }); !errors.Is(err, jobqueue.ErrUnavailable) {
		t.Errorf("History with the database down = %v, want ErrUnavailable", err)
	}

	srv.Start(t)
	if err := s.Commit(ctx, &txn); err != nil {
		t.Fatalf("Commit once the database is back: %v", err)
	}
	c, err := s.NextCluster(ctx, "alice")
	if err != nil || c != 2 {
		t.Errorf("NextCluster once the database is back = %d, %v; want 2", c, err)
	}
	s.Close()
	s = openT(t, dsn)
	if s.Len() != 5 {
		t.Errorf("after reopening: Len = %d, want 5", s.Len())
	}
	if ad, _ := s.Get(jobqueue.JobID{Cluster: 1, Proc: 0}); ad == nil {
		t.Error("1.0 lost")
	} else if st, _ := ad.EvalInt("JobStatus"); st != 2 {
		t.Errorf("after reopening: JobStatus = %d, want 2", st)
	}
}

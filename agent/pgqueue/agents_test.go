package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/jobqueue/storetest"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/internal/pgtest"
	"harrier.dev/harrier/joblog"
)

// submitAs reserves a cluster of s for owner and commits n jobs into it,
// each with the GlobalJobId the agent gives it.
func submitAs(t *testing.T, s *Store, owner string, n int) int {
	t.Helper()
	ctx := context.Background()
	c, err := s.NextCluster(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	txn := storetest.Submission(c, n)
	for _, op := range txn.Ops() {
		op.Ad().SetString("Owner", owner)
		op.Ad().SetString("GlobalJobId", fmt.Sprintf("%s#%s#1", s.opts.Agent, op.Job()))
	}
	txn.UseCluster(c, owner)
	if err := s.Commit(ctx, txn); err != nil {
		t.Fatal(err)
	}
	return c
}

func scanIDs(s *Store) []string {
	var ids []string
	s.Scan(func(id jobqueue.JobID, _ *classad.ClassAd) bool {
		ids = append(ids, id.String())
		return true
	})
	return ids
}

// TestAgentsShareDatabase: two agents keep their queues in one database,
// each its own: cluster numbers count per agent, neither store sees nor
// changes the other's jobs, an agent's queue is open in one store at a
// time while the other agent's store goes on, and EveryAgent lists both.
func TestAgentsShareDatabase(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.DSN(srv.NewDatabase(t))
	ctx := context.Background()
	a, b := openT(t, dsn, "agent@a"), openT(t, dsn, "agent@b")
	if ca, cb := submitAs(t, a, "alice", 2), submitAs(t, b, "bob", 3); ca != 1 || cb != 1 {
		t.Errorf("first clusters: agent@a %d, agent@b %d; want 1 each", ca, cb)
	}
	if got := scanIDs(a); !slices.Equal(got, []string{"1.0", "1.1"}) {
		t.Errorf("agent@a's queue: %v", got)
	}
	if got := scanIDs(b); !slices.Equal(got, []string{"1.0", "1.1", "1.2"}) {
		t.Errorf("agent@b's queue: %v", got)
	}
	if _, err := Open(ctx, dsn, Options{Agent: "agent@a"}); !errors.Is(err, jobqueue.ErrLocked) {
		t.Errorf("a second store of agent@a: %v, want ErrLocked", err)
	}

	// agent@a retires its 1.0; agent@b's 1.0 stays.
	ad, _ := a.Get(jobqueue.JobID{Cluster: 1, Proc: 0})
	var txn jobqueue.Txn
	txn.Retire(jobqueue.JobID{Cluster: 1, Proc: 0}, ad)
	if err := a.Commit(ctx, &txn); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Get(jobqueue.JobID{Cluster: 1, Proc: 0}); !ok {
		t.Error("agent@a's retirement took agent@b's 1.0")
	}
	var hist []string
	if err := b.History(func(ad *classad.ClassAd) bool { hist = append(hist, ad.String()); return true }); err != nil || len(hist) != 0 {
		t.Errorf("agent@b's history: %v, %v; want empty", hist, err)
	}

	var every []string
	if err := b.EveryAgent(func(agent string, ad *classad.ClassAd) bool {
		g, _ := ad.EvalString("GlobalJobId")
		every = append(every, agent+" "+g[:strings.LastIndex(g, "#")])
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"agent@a agent@a#1.1", "agent@b agent@b#1.0", "agent@b agent@b#1.1", "agent@b agent@b#1.2"}
	if !slices.Equal(every, want) {
		t.Errorf("EveryAgent:\n%v\nwant\n%v", every, want)
	}

	// Reopened, agent@a has its own queue and counter back.
	a.Close()
	a = openT(t, dsn, "agent@a")
	if got := scanIDs(a); !slices.Equal(got, []string{"1.1"}) {
		t.Errorf("agent@a's queue reopened: %v", got)
	}
	if c := submitAs(t, a, "alice", 1); c != 2 {
		t.Errorf("agent@a's next cluster after reopening: %d, want 2", c)
	}
	if c := submitAs(t, b, "bob", 1); c != 2 {
		t.Errorf("agent@b's next cluster: %d, want 2", c)
	}
}

// at0001 makes a database as a harrier of schema version 1 left it, with
// agent's jobs 1.0 and 1.1 in the queue, 2.0 in the history, cluster 3
// reserved for bob and the counter at 4.
func at0001(t *testing.T, srv *pgtest.Server, agent string) string {
	t.Helper()
	ctx := context.Background()
	dsn := srv.DSN(srv.NewDatabase(t))
	conn := connect(t, dsn)
	v1, err := schema.SQL(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, v1); err != nil {
		t.Fatal(err)
	}
	ad := func(c, p, status int) string {
		return fmt.Sprintf(`{"ClusterId":%d,"ProcId":%d,"Owner":"alice","JobStatus":%d,"GlobalJobId":"%s#%d.%d#1"}`, c, p, status, agent, c, p)
	}
	for _, q := range []string{
		`INSERT INTO schema_version VALUES (1, '0001_queue.sql')`,
		`UPDATE queue_counters SET next_cluster = 4`,
		`INSERT INTO cluster_reservations (cluster, owner) VALUES (3, 'bob')`,
		fmt.Sprintf(`INSERT INTO jobs VALUES (1, 0, 'alice', 1, '%s'), (1, 1, 'alice', 2, '%s')`, ad(1, 0, 1), ad(1, 1, 2)),
		fmt.Sprintf(`INSERT INTO job_history (cluster, proc, owner, status, ad) VALUES (2, 0, 'alice', 4, '%s')`, ad(2, 0, 4)),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dsn
}

// TestUpgradeFrom0001: a database of schema version 1, one agent's queue,
// upgrades to its agent's queue with everything in it: jobs, history,
// reservations and counter. Opened first by another agent, it is refused
// rather than given away.
func TestUpgradeFrom0001(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	ctx := context.Background()

	dsn := at0001(t, srv, "agent@a")
	if s, err := Open(ctx, dsn, Options{Agent: "agent@b"}); err == nil || !strings.Contains(err.Error(), "agent agent@a's, not agent@b's") {
		if err == nil {
			s.Close()
		}
		t.Errorf("agent@b opening agent@a's version 1 database: %v, want it refused", err)
	}

	s := openT(t, dsn, "agent@a")
	if got := scanIDs(s); !slices.Equal(got, []string{"1.0", "1.1"}) {
		t.Errorf("upgraded queue: %v", got)
	}
	var hist []string
	if err := s.History(func(ad *classad.ClassAd) bool { hist = append(hist, jobIDOf(ad)); return true }); err != nil || !slices.Equal(hist, []string{"2.0"}) {
		t.Errorf("upgraded history: %v, %v", hist, err)
	}
	// bob's reservation of 3 is still his; the counter goes on from 4.
	var txn jobqueue.Txn
	txn.UseCluster(3, "bob")
	if err := s.Commit(ctx, &txn); err != nil {
		t.Errorf("using bob's reservation after the upgrade: %v", err)
	}
	if c, err := s.NextCluster(ctx, "alice"); err != nil || c != 4 {
		t.Errorf("NextCluster after the upgrade: %d, %v; want 4", c, err)
	}
	// Another agent now starts its own queue beside it.
	if c := submitAs(t, openT(t, dsn, "agent@b"), "bob", 1); c != 1 {
		t.Errorf("agent@b's first cluster: %d, want 1", c)
	}
	var rows string
	if err := connect(t, dsn).QueryRow(ctx, `SELECT string_agg(format('%s %s.%s %s', agent, cluster, proc, status_name), ', ' ORDER BY agent, cluster, proc) FROM jobs`).Scan(&rows); err != nil ||
		rows != "agent@a 1.0 Idle, agent@a 1.1 Running, agent@b 1.0 Idle" {
		t.Errorf("jobs view after the upgrade: %q, %v", rows, err)
	}
}

func jobIDOf(ad *classad.ClassAd) string {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	return fmt.Sprintf("%d.%d", c, p)
}

// TestEventsAndViews: events committed with a transaction are in
// job_events, with the job's owner, if and only if the transaction
// applied; and the views answer the provenance question (what ran on a
// host, and what it read) with typed columns.
func TestEventsAndViews(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.DSN(srv.NewDatabase(t))
	ctx := context.Background()
	s := openT(t, dsn)
	c := submitAs(t, s, "alice", 2)
	id := jobqueue.JobID{Cluster: c, Proc: 0}
	start := time.Unix(1_700_000_000, 0)
	var txn jobqueue.Txn
	txn.SetValue(id, "JobStatus", classad.Int(2))
	if err := s.CommitEvents(ctx, &txn, []joblog.Event{{Type: joblog.Execute, Cluster: c, Proc: 0, Time: start, Host: "10.0.0.7:9618"}}); err != nil {
		t.Fatal(err)
	}
	// A transaction that does not apply leaves no event.
	txn = jobqueue.Txn{}
	txn.SetValue(jobqueue.JobID{Cluster: 99, Proc: 0}, "JobStatus", classad.Int(2))
	if err := s.CommitEvents(ctx, &txn, []joblog.Event{{Type: joblog.Execute, Cluster: 99, Proc: 0, Time: start}}); !errors.Is(err, jobqueue.ErrNotFound) {
		t.Fatalf("commit of a missing job: %v", err)
	}

	ad, _ := s.Get(id)
	file, err := classad.Parse(`[ Name = "/home/alice/in.dat"; OpenCount = 1; ReadCount = 3; ReadBytes = 50000; WriteCount = 0; WriteBytes = 0; SeekCount = 0; Seconds = 0.25 ]`)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]classad.Value{
		"JobStatus": classad.Int(4), "ExitCode": classad.Int(3), "LastRemoteHost": classad.String("slot1@exec7"),
		"JobCurrentStartDate": classad.Int(start.Unix()), "CompletionDate": classad.Int(start.Unix() + 60),
		"BytesRecvd": classad.Int(50000), "RemoteIOFiles": classad.List(classad.AdValue(file)),
	} {
		ad.SetValue(name, v)
	}
	txn = jobqueue.Txn{}
	txn.Retire(id, ad)
	end := joblog.Event{Type: joblog.Terminated, Cluster: c, Proc: 0, Time: start.Add(time.Minute), Normal: true, ReturnValue: 3, BytesReceived: 50000}
	if err := s.CommitEvents(ctx, &txn, []joblog.Event{end}); err != nil {
		t.Fatal(err)
	}

	conn := connect(t, dsn)
	rows, _ := conn.Query(ctx, `SELECT format('%s.%s %s %s %s %s %s', cluster, proc, owner, event, coalesce(host, '-'), coalesce(exit_code::text, '-'), coalesce(bytes_read::text, '-'))
		FROM job_events ORDER BY seq`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1.0 alice Execute 10.0.0.7:9618 - 0", "1.0 alice Terminated - 3 50000"}
	if !slices.Equal(got, want) {
		t.Errorf("job_events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What ran on exec7 that day, and what did it read?
	var answer string
	err = conn.QueryRow(ctx, `SELECT format('%s %s.%s %s %s %s %s %s', agent, cluster, proc, owner, exit_code, file, bytes_read, ended - started)
		FROM usage WHERE machine = 'exec7' AND started >= $1 AND started < $1 + interval '1 day'`, start.Add(-time.Hour)).Scan(&answer)
	if want := "agent@a 1.0 alice 3 /home/alice/in.dat 50000 00:01:00"; err != nil || answer != want {
		t.Errorf("provenance query: %q, %v; want %q", answer, err, want)
	}
	var status string
	if err := conn.QueryRow(ctx, `SELECT format('%s %s %s', status_name, host, exit_code) FROM job_history WHERE cluster = $1 AND proc = 0`, c).Scan(&status); err != nil || status != "Completed slot1@exec7 3" {
		t.Errorf("job_history: %q, %v", status, err)
	}
}

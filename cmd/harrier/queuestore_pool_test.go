package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/internal/pgtest"
)

// TestQueueInPostgres: a pool made with pool up --store postgres://…
// keeps its queue in that database. When the database stops under it, a
// submit is refused saying why, the running job goes on running, and its
// exit waits; once the database is back the exit is recorded and submits
// are taken again. Every acknowledged job is in the database at the end,
// and the matchmaker's accountant is kept there too.
func TestQueueInPostgres(t *testing.T) {
	needPool(t)
	srv := pgtest.Start(t, pgtest.Options{})
	db := srv.NewDatabase(t)
	p := startPoolFrom(t, harrierBin(t), 1, "", "--store", srv.URL(db))
	if out := p.must(t, "config-val", "QUEUE_STORE", "QUEUE_DSN"); out != "postgres\n"+srv.URL(db)+"\n" {
		t.Errorf("config-val QUEUE_STORE QUEUE_DSN:\n%s", out)
	}

	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	quick := p.submit(t, dir, "quick.sub", "executable = /bin/true\nqueue 2\n")
	flag := filepath.Join(dir, "go")
	long := p.submit(t, dir, "long.sub", fmt.Sprintf(`executable = /bin/sh
arguments = "-c 'while [ ! -e %s ]; do sleep 0.1; done'"
queue
`, flag))
	longID := fmt.Sprintf("%d.0", long)
	eventually(t, 60*time.Second, "the quick jobs to finish and the long one to run", func() bool {
		return p.jobStatus(t, fmt.Sprintf("%d.0", quick)) == 0 && p.jobStatus(t, fmt.Sprintf("%d.1", quick)) == 0 &&
			p.jobStatus(t, longID) == 2
	})

	srv.Stop(t)
	writeFile(t, filepath.Join(dir, "late.sub"), "executable = /bin/true\nqueue\n", 0o644)
	out, code := p.harrier(t, "submit", filepath.Join(dir, "late.sub"))
	if code == 0 || !strings.Contains(out, "job queue's database is unavailable") {
		t.Errorf("submit with the database down: exit %d: %s", code, out)
	}
	if st := p.jobStatus(t, longID); st != 2 {
		t.Errorf("with the database down the long job's status is %d, want 2 (running)", st)
	}
	// The job ends while the database is away; its exit waits for it.
	writeFile(t, flag, "", 0o644)
	eventually(t, 60*time.Second, "the agent to try to record the exit", func() bool {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log", "agent.log"))
		return strings.Contains(string(log), "apply job exit: job queue unavailable; trying again")
	})
	if st := p.jobStatus(t, longID); st != 2 {
		t.Errorf("an exit was recorded with the database down: status %d", st)
	}

	srv.Start(t)
	eventually(t, 60*time.Second, "the long job's exit to be recorded", func() bool {
		return p.jobStatus(t, longID) == 0
	})
	late := p.submit(t, dir, "late.sub", "executable = /bin/true\nqueue\n")
	eventually(t, 60*time.Second, "the job submitted after the database came back to finish", func() bool {
		return p.jobStatus(t, fmt.Sprintf("%d.0", late)) == 0
	})

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT format('%s.%s %s', cluster, proc, ad->>'ExitCode') FROM job_history ORDER BY cluster, proc`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%d.0 0", quick), fmt.Sprintf("%d.1 0", quick), longID + " 0", fmt.Sprintf("%d.0 0", late)}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("job_history holds %v, want %v", got, want)
	}
	if hist := p.jobs(t, "history", longID); len(hist) != 1 {
		t.Errorf("harrier history %s: %d ads", longID, len(hist))
	}
	// A factor set at run time is saved at once, with every user's
	// priority, in the database.
	p.must(t, "userprio", "-setfactor", "carol", "7")
	var factor float64
	if err := conn.QueryRow(ctx, `SELECT factor FROM accountant_factors WHERE pool = 'personal' AND username = 'carol'`).Scan(&factor); err != nil || factor != 7 {
		t.Errorf("carol's factor in the database: %v, %v; want 7", factor, err)
	}
	rows, _ = conn.Query(ctx, `SELECT username FROM user_priorities WHERE pool = 'personal' ORDER BY 1`)
	saved, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, ad := range p.jobs(t, "userprio") {
		shown = append(shown, fmt.Sprint(ad["Name"]))
	}
	slices.Sort(shown)
	if !slices.Equal(saved, shown) {
		t.Errorf("user_priorities holds %v; harrier userprio shows %v", saved, shown)
	}
}

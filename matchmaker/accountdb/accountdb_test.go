package accountdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"harrier.dev/harrier/internal/pgtest"
	"harrier.dev/harrier/matchmaker"
)

// TestAccountantInDatabase: an accountant kept in the database comes back
// after a restart with every user's priority, usage and run-time factor;
// user_priorities shows them to SQL as harrier userprio does; and another
// pool's accountant in the same database is apart.
func TestAccountantInDatabase(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	db := srv.NewDatabase(t)
	ctx := context.Background()
	open := func(pool string) *Store {
		t.Helper()
		s, err := Open(ctx, srv.DSN(db), pool)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := matchmaker.NewAccountant(time.Hour, 1, map[string]float64{"carol": 3})
	if err := a.PersistIn(open("cm1")); err != nil {
		t.Fatal(err)
	}
	a.Update(t0, map[string]int{"alice": 4, "bob": 1, "carol": 1})
	a.Update(t0.Add(30*time.Minute), map[string]int{"alice": 4, "bob": 1, "carol": 1})
	if err := a.SetFactor("bob", 10); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	before := a.Users()

	b := matchmaker.NewAccountant(time.Hour, 1, map[string]float64{"carol": 3})
	if err := b.PersistIn(open("cm1")); err != nil {
		t.Fatal(err)
	}
	after := b.Users()
	if len(after) != 3 || len(after) != len(before) {
		t.Fatalf("%d users after the restart, want %d", len(after), len(before))
	}
	for i := range before {
		// The database keeps times to the microsecond, and not their zone.
		before[i].AccumulatedUsage = before[i].AccumulatedUsage.Truncate(time.Microsecond)
		before[i].LastUsage, after[i].LastUsage = before[i].LastUsage.UTC(), after[i].LastUsage.UTC()
		if before[i] != after[i] {
			t.Errorf("user %d: %+v before, %+v after", i, before[i], after[i])
		}
	}
	other := matchmaker.NewAccountant(time.Hour, 1, nil)
	if err := other.PersistIn(open("cm2")); err != nil {
		t.Fatal(err)
	}
	if u := other.Users(); len(u) != 0 {
		t.Errorf("pool cm2's accountant has cm1's users: %+v", u)
	}

	conn, err := pgx.Connect(ctx, srv.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT username, priority, factor, resources_used, usage_hours FROM user_priorities WHERE pool = 'cm1' ORDER BY priority`)
	type row struct {
		User             string
		Priority, Factor float64
		Used             int
		Hours            float64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range before {
		if i >= len(got) {
			t.Fatalf("user_priorities has %d rows, want %d", len(got), len(before))
		}
		g := got[i]
		if g.User != u.Name || !near(g.Priority, u.Priority) || g.Factor != u.Factor || g.Used != u.ResourcesUsed || !near(g.Hours, u.AccumulatedUsage.Hours()) {
			t.Errorf("user_priorities row %d: %+v, want %+v", i, g, u)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

package jobqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// use commits UseCluster(c, owner) with one job of the cluster.
func use(l *Log, c int, owner string) error {
	var txn Txn
	txn.UseCluster(c, owner)
	txn.NewJob(JobID{c, 0}, jobAd(c, 0))
	return l.Commit(context.Background(), &txn)
}

// TestReservationsBelongToTheirOwner: a cluster is filled once, by the
// owner it was reserved for, never again after its jobs leave, and an open
// reservation survives restarts and compactions.
func TestReservationsBelongToTheirOwner(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{})
	defer func() { l.Close() }()
	a, err := l.NextCluster(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.NextCluster(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.NextCluster(ctx, ""); err == nil {
		t.Error("NextCluster without an owner succeeded")
	}
	for _, tc := range []struct {
		c     int
		owner string
	}{{a, "bob"}, {b, "alice"}, {b + 100, "alice"}, {0, "alice"}, {-1, "alice"}, {a, ""}} {
		if err := use(l, tc.c, tc.owner); !errors.Is(err, ErrNotReserved) {
			t.Errorf("%s used cluster %d: %v, want ErrNotReserved", tc.owner, tc.c, err)
		}
	}
	if err := use(l, a, "alice"); err != nil {
		t.Fatalf("alice uses her cluster: %v", err)
	}
	if err := use(l, a, "alice"); !errors.Is(err, ErrNotReserved) {
		t.Errorf("alice used her cluster twice: %v", err)
	}
	retireT(t, l, JobID{a, 0})
	var txn Txn
	txn.UseCluster(a, "alice")
	txn.NewJob(JobID{a, 1}, jobAd(a, 1))
	if err := l.Commit(ctx, &txn); !errors.Is(err, ErrNotReserved) {
		t.Errorf("cluster %d used again after its jobs left: %v", a, err)
	}

	seen := map[int]bool{a: true, b: true}
	for _, compact := range []bool{false, true} {
		if compact {
			if err := l.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		l = openT(t, dir, Options{})
		if err := use(l, a, "alice"); !errors.Is(err, ErrNotReserved) {
			t.Errorf("after reopening (compacted %v): cluster %d used again: %v", compact, a, err)
		}
		if err := use(l, b, "alice"); !errors.Is(err, ErrNotReserved) {
			t.Errorf("after reopening (compacted %v): alice used bob's cluster: %v", compact, err)
		}
		c, err := l.NextCluster(ctx, "carol")
		if err != nil || seen[c] {
			t.Errorf("after reopening (compacted %v): NextCluster = %d, %v: a number used before", compact, c, err)
		}
		seen[c] = true
	}
	if err := use(l, b, "bob"); err != nil {
		t.Errorf("bob's reservation did not survive restarts and a compaction: %v", err)
	}
}

// TestReservationsBounded: an owner's reservations beyond MaxReservations
// end the oldest, before and after a restart; other owners keep theirs.
func TestReservationsBounded(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{NoSync: true, MaxReservations: 3}
	l := openT(t, dir, opts)
	defer func() { l.Close() }()
	bob, _ := l.NextCluster(ctx, "bob")
	var alice []int
	for range 5 {
		c, err := l.NextCluster(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		alice = append(alice, c)
	}
	l.Close()
	l = openT(t, dir, opts)
	for i, c := range alice {
		err := use(l, c, "alice")
		if i < 2 && !errors.Is(err, ErrNotReserved) {
			t.Errorf("alice's reservation %d of 5 (cluster %d) is still open: %v", i+1, c, err)
		}
		if i >= 2 && err != nil {
			t.Errorf("alice's reservation %d of 5 (cluster %d): %v", i+1, c, err)
		}
	}
	if err := use(l, bob, "bob"); err != nil {
		t.Errorf("bob's reservation ended by alice's: %v", err)
	}
}

// TestReservationUsedOnce races many commits that use the same
// reservation, which group commit checks together: one wins.
func TestReservationUsedOnce(t *testing.T) {
	l := openT(t, t.TempDir(), Options{})
	defer l.Close()
	c, err := l.NextCluster(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var won, lost atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			switch err := use(l, c, "alice"); {
			case err == nil:
				won.Add(1)
			case errors.Is(err, ErrNotReserved):
				lost.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != 31 {
		t.Errorf("%d commits used the reservation, %d were refused; want 1 and 31", won.Load(), lost.Load())
	}
}

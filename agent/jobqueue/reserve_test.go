package jobqueue

import (
	"context"
	"errors"
	"testing"
)

// use commits UseCluster(c, owner) with one job of the cluster.
func use(l *Log, c int, owner string) error {
	var txn Txn
	txn.UseCluster(c, owner)
	txn.NewJob(JobID{c, 0}, jobAd(c, 0))
	return l.Commit(context.Background(), &txn)
}

// TestReservationsSurviveCompaction: the cluster counter and the open
// reservations are kept in the snapshot a compaction writes, once the
// logs that made them are gone. (storetest checks reservations across
// restarts.)
func TestReservationsSurviveCompaction(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{})
	defer func() { l.Close() }()
	a, _ := l.NextCluster(ctx, "alice")
	b, _ := l.NextCluster(ctx, "bob")
	if err := use(l, a, "alice"); err != nil {
		t.Fatal(err)
	}
	retireT(t, l, JobID{a, 0})
	if err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openT(t, dir, Options{})
	if err := use(l, a, "alice"); !errors.Is(err, ErrNotReserved) {
		t.Errorf("after a compaction: cluster %d used again: %v", a, err)
	}
	if err := use(l, b, "alice"); !errors.Is(err, ErrNotReserved) {
		t.Errorf("after a compaction: alice used bob's cluster: %v", err)
	}
	if c, err := l.NextCluster(ctx, "carol"); err != nil || c <= b {
		t.Errorf("after a compaction: NextCluster = %d, %v: a number used before", c, err)
	}
	if err := use(l, b, "bob"); err != nil {
		t.Errorf("bob's reservation did not survive a compaction: %v", err)
	}
}

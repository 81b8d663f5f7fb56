package jobqueue

import (
	"context"
	"errors"
	"testing"

	"harrier.dev/harrier/classad"
)

// A fault before the write fails the Commit with nothing applied, after a
// reopen too; a fault once the transaction is durable fails the Commit
// with the transaction applied, as a crash at either point leaves it.
func TestFaultBeforeAndAfterTheWrite(t *testing.T) {
	dir := t.TempDir()
	crash := errors.New("crash")
	var failAt bool // the point that fails: durable or not
	l := openT(t, dir, Options{Fault: func(_ *Txn, durable bool) error {
		if durable == failAt {
			return crash
		}
		return nil
	}})
	ctx := context.Background()
	id := JobID{Cluster: 1}
	failAt = true
	txn := &Txn{}
	txn.NewJob(id, jobAd(1, 0))
	if err := l.Commit(ctx, txn); !errors.Is(err, crash) {
		t.Fatalf("commit with a fault after the write: %v, want the fault", err)
	}
	failAt = false
	txn = &Txn{}
	txn.SetValue(id, "Counter", classad.Int(1))
	if err := l.Commit(ctx, txn); !errors.Is(err, crash) {
		t.Fatalf("commit with a fault before the write: %v, want the fault", err)
	}
	must(l.Close())
	l = openT(t, dir, Options{})
	defer l.Close()
	ad, ok := l.Get(id)
	if !ok {
		t.Fatal("the job added before the fault after its write is lost")
	}
	if _, ok := ad.Lookup("Counter"); ok {
		t.Error("the change that failed before its write was applied")
	}
}

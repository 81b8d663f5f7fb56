package agent

import (
	"context"
	"path/filepath"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// A factory's last jobs are made in one commit with its removal; if that
// commit fails the factory, and the agent's count of factories, stay, so
// that the jobs are made later.
func TestFactoryCountedUntilItsRemovalCommits(t *testing.T) {
	fail := false
	q, err := jobqueue.Open(filepath.Join(t.TempDir(), "queue"), jobqueue.Options{NoSync: true,
		Fault: func(*jobqueue.Txn, bool) error {
			if fail {
				return errCrashed
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	common, err := classad.Parse(`[ ClusterId = 1; JobStatus = 1; Owner = "u"; JobMaterializeMaxIdle = 1 ]`)
	if err != nil {
		t.Fatal(err)
	}
	factory := jobqueue.JobID{Cluster: 1, Proc: factoryProc}
	txn := &jobqueue.Txn{}
	txn.NewJob(factory, factoryAd(common, 1, 0, []string{`[ ProcId = 0 ]`, `[ ProcId = 1 ]`}))
	if err := q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	a := newTestAgent(t, q)
	if err := a.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := a.factories.Load(); n != 1 {
		t.Fatalf("%d factories counted, want 1", n)
	}
	fail = true
	if err := a.makeJobs(context.Background(), factory, 2); err == nil {
		t.Fatal("making the jobs committed through a failing store")
	}
	if n := a.factories.Load(); n != 1 {
		t.Errorf("%d factories counted after a failed commit, want 1", n)
	}
	fail = false
	if err := a.makeJobs(context.Background(), factory, 2); err != nil {
		t.Fatal(err)
	}
	if _, ok := q.Get(factory); ok || a.factories.Load() != 0 {
		t.Errorf("factory still queued (%v) or counted (%d) once its jobs are made", ok, a.factories.Load())
	}
	if q.Len() != 2 {
		t.Errorf("%d entries in the queue, want the 2 jobs", q.Len())
	}
}

// TestMaterializable: max_idle counts a cluster's idle jobs, max_materialize
// all of its jobs in the queue; with both, the stricter decides.
func TestMaterializable(t *testing.T) {
	for _, tc := range []struct {
		attrs         string
		idle, present int64
		want          int64
	}{
		{"", 0, 0, -1},
		{"JobMaterializeMaxIdle = 5", 2, 9, 3},
		{"JobMaterializeLimit = 10", 2, 9, 1},
		{"JobMaterializeLimit = 10", 0, 10, 0},
		{"JobMaterializeMaxIdle = 5; JobMaterializeLimit = 10", 0, 8, 2},
		{"JobMaterializeMaxIdle = 5; JobMaterializeLimit = 10", 4, 5, 1},
	} {
		f, err := classad.Parse("[" + tc.attrs + "]")
		if err != nil {
			t.Fatal(err)
		}
		if got := materializable(f, tc.idle, tc.present); got != tc.want {
			t.Errorf("[%s] with %d idle of %d: %d more, want %d", tc.attrs, tc.idle, tc.present, got, tc.want)
		}
	}
}

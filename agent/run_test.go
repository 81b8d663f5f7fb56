package agent

import (
	"context"
	"path/filepath"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// A reused claim takes the next idle job of the cluster it ran, stepping
// over the jobs that have left the queue and those that run, before it
// looks at the rest of the queue.
func TestNextJobForStepsOverGaps(t *testing.T) {
	q, err := jobqueue.Open(filepath.Join(t.TempDir(), "queue"), jobqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a, err := New(Config{Name: "agent@test", Queue: q, ShadowCommand: []string{"shadow"}})
	if err != nil {
		t.Fatal(err)
	}
	txn := &jobqueue.Txn{}
	for p := range 10 {
		ad := classad.New()
		ad.SetInt("ClusterId", 1)
		ad.SetInt("ProcId", int64(p))
		ad.SetBool("Requirements", true)
		ad.SetValue(AttrJobStatus, Idle.value())
		if p == 7 {
			ad.SetValue(AttrJobStatus, Running.value())
		}
		txn.NewJob(jobqueue.JobID{Cluster: 1, Proc: p}, ad)
	}
	if err := q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	txn = &jobqueue.Txn{}
	txn.Destroy(jobqueue.JobID{Cluster: 1, Proc: 5}) // completed
	txn.Destroy(jobqueue.JobID{Cluster: 1, Proc: 6})
	if err := q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	machine, err := classad.Parse(`[ MyType = "Machine"; Requirements = true ]`)
	if err != nil {
		t.Fatal(err)
	}
	c := &claim{id: "c1", slot: "slot1@host", machine: machine}
	r, ad := a.nextJobFor(c, jobqueue.JobID{Cluster: 1, Proc: 4})
	if r == nil {
		t.Fatal("no next job")
	}
	if want := (jobqueue.JobID{Cluster: 1, Proc: 8}); r.id != want || jobID(ad) != want {
		t.Errorf("next job %s (ad of %s), want %s", r.id, jobID(ad), want)
	}
	// With nothing left after it in the cluster, the queue is searched.
	if r, _ = a.nextJobFor(c, jobqueue.JobID{Cluster: 1, Proc: 9}); r == nil || r.id != (jobqueue.JobID{Cluster: 1, Proc: 0}) {
		t.Errorf("next job after the cluster's last: %v, want 1.0", r)
	}
}

// A reused claim whose cluster has no job left takes the first idle job of
// a following cluster (a DAG's nodes, a cluster each) before it searches
// the queue from its start.
func TestNextJobForTakesTheNextCluster(t *testing.T) {
	q, err := jobqueue.Open(filepath.Join(t.TempDir(), "queue"), jobqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a, err := New(Config{Name: "agent@test", Queue: q, ShadowCommand: []string{"shadow"}})
	if err != nil {
		t.Fatal(err)
	}
	txn := &jobqueue.Txn{}
	// Cluster 1 waits idle; 2 ran; 3 runs; 4 has left; 5 waits.
	for _, c := range []int{1, 2, 3, 5} {
		ad := classad.New()
		ad.SetInt("ClusterId", int64(c))
		ad.SetInt("ProcId", 0)
		ad.SetBool("Requirements", true)
		ad.SetValue(AttrJobStatus, Idle.value())
		if c == 2 || c == 3 {
			ad.SetValue(AttrJobStatus, Running.value())
		}
		txn.NewJob(jobqueue.JobID{Cluster: c, Proc: 0}, ad)
	}
	if err := q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	machine, err := classad.Parse(`[ MyType = "Machine"; Requirements = true ]`)
	if err != nil {
		t.Fatal(err)
	}
	c := &claim{id: "c1", slot: "slot1@host", machine: machine}
	if r, _ := a.nextJobFor(c, jobqueue.JobID{Cluster: 2, Proc: 0}); r == nil || r.id != (jobqueue.JobID{Cluster: 5, Proc: 0}) {
		t.Errorf("next job after 2.0: %v, want 5.0", r)
	}
	// With no cluster after it waiting, the queue is searched.
	if r, _ := a.nextJobFor(c, jobqueue.JobID{Cluster: 5, Proc: 0}); r == nil || r.id != (jobqueue.JobID{Cluster: 1, Proc: 0}) {
		t.Errorf("next job after 5.0: %v, want 1.0", r)
	}
}

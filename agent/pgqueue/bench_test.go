package pgqueue

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/jobqueue/storetest"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/internal/pgtest"
)

// The benchmarks run each backend in the same process, durably: the
// embedded log with its fsyncs, PostgreSQL (a server of the benchmark's
// own, on a Unix socket) with fsync on and synchronous commits.

// backends returns an opener of a new empty queue for each backend.
func backends(b *testing.B) []struct {
	name string
	open func(b *testing.B) storetest.Store
} {
	srv := pgtest.Start(b, pgtest.Options{Durable: true})
	return []struct {
		name string
		open func(b *testing.B) storetest.Store
	}{
		{"embedded", func(b *testing.B) storetest.Store {
			l, err := jobqueue.Open(filepath.Join(b.TempDir(), "queue"), jobqueue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return l
		}},
		{"postgres", func(b *testing.B) storetest.Store {
			s, err := Open(context.Background(), srv.DSN(srv.NewDatabase(b)), Options{Agent: "agent@bench"})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
}

// submit reserves a cluster for alice and commits n jobs into it.
func submit(ctx context.Context, s jobqueue.Store, n int) (int, error) {
	c, err := s.NextCluster(ctx, "alice")
	if err != nil {
		return 0, err
	}
	txn := storetest.Submission(c, n)
	txn.UseCluster(c, "alice")
	return c, s.Commit(ctx, txn)
}

// BenchmarkSubmit commits clusters of 1,000 jobs, one durable transaction
// each: submission throughput.
func BenchmarkSubmit(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			s := be.open(b)
			defer s.Close()
			ctx := context.Background()
			start := time.Now()
			for b.Loop() {
				if _, err := submit(ctx, s, 1000); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// BenchmarkCommitLatency commits one attribute change at a time, each
// waiting for the last: the latency of a durable commit.
func BenchmarkCommitLatency(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			s := be.open(b)
			defer s.Close()
			ctx := context.Background()
			c, err := submit(ctx, s, 1)
			if err != nil {
				b.Fatal(err)
			}
			i := int64(0)
			for b.Loop() {
				var txn jobqueue.Txn
				txn.SetValue(jobqueue.JobID{Cluster: c}, "ImageSize", classad.Int(i))
				if err := s.Commit(ctx, &txn); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkTurnover runs jobs through the queue behind 1,000, 10,000 and 100,000
// idle ones: 16 workers each submit a job, start it and retire it (a
// reservation and three commits a job), as an agent does for short jobs.
// CondorJ2's point is that this throughput must not fall as the queue
// grows.
func BenchmarkTurnover(b *testing.B) {
	for _, be := range backends(b) {
		for _, queued := range []int{1000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/queued=%d", be.name, queued), func(b *testing.B) {
				s := be.open(b)
				defer s.Close()
				ctx := context.Background()
				if _, err := submit(ctx, s, queued); err != nil {
					b.Fatal(err)
				}
				const workers, each = 16, 25
				start := time.Now()
				for b.Loop() {
					var wg sync.WaitGroup
					for range workers {
						wg.Go(func() {
							for range each {
								if err := turnover(ctx, s); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
				}
				if s.Len() != queued {
					b.Errorf("%d jobs left in the queue, want %d", s.Len(), queued)
				}
				b.ReportMetric(float64(workers*each*b.N)/time.Since(start).Seconds(), "jobs/s")
			})
		}
	}
}

// turnover submits one job, marks it running, and retires it.
func turnover(ctx context.Context, s jobqueue.Store) error {
	c, err := submit(ctx, s, 1)
	if err != nil {
		return err
	}
	id := jobqueue.JobID{Cluster: c}
	var txn jobqueue.Txn
	txn.SetValue(id, "JobStatus", classad.Int(2))
	if err := s.Commit(ctx, &txn); err != nil {
		return err
	}
	ad, _ := s.Get(id)
	ad.SetInt("JobStatus", 4)
	txn = jobqueue.Txn{}
	txn.Retire(id, ad)
	return s.Commit(ctx, &txn)
}

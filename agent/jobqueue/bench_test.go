package jobqueue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// submission builds the transaction of one cluster of n jobs the way a
// submit does: each proc ad is the first one with its own ProcId,
// Arguments and output files, sharing the other expressions.
func submission(c, n int) *Txn {
	base := jobAd(c, 0)
	var txn Txn
	for p := range n {
		ad := base.Copy()
		ad.SetInt("ProcId", int64(p))
		ad.SetString("Arguments", fmt.Sprintf("--input in.%d.dat --seed %d", p, p*7))
		ad.SetString("Out", fmt.Sprintf("out.%d", p))
		ad.SetString("Err", fmt.Sprintf("err.%d", p))
		txn.NewJob(JobID{c, p}, ad)
	}
	return &txn
}

// BenchmarkSubmit100k commits one cluster of 100,000 25-attribute jobs as
// one durable transaction.
func BenchmarkSubmit100k(b *testing.B) {
	b.ReportAllocs()
	l := openT(b, b.TempDir(), Options{CompactRatio: -1})
	defer l.Close()
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		c, err := l.NextCluster(ctx, "alice")
		if err != nil {
			b.Fatal(err)
		}
		txn := submission(c, 100_000)
		b.StartTimer()
		start := time.Now()
		if err := l.Commit(ctx, txn); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/submit")
}

// BenchmarkEdits64 commits 10,000 single-Set transactions (a hold each)
// from 64 goroutines, durably; group commit shares the fsyncs.
func BenchmarkEdits64(b *testing.B) {
	b.ReportAllocs()
	const jobs, workers = 10_000, 64
	l := openT(b, b.TempDir(), Options{})
	defer l.Close()
	ctx := context.Background()
	if err := l.Commit(ctx, submission(1, jobs)); err != nil {
		b.Fatal(err)
	}
	held := classad.Literal(classad.Int(5))
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for p := w; p < jobs; p += workers {
					var txn Txn
					txn.Set(JobID{1, p}, "JobStatus", held)
					if err := l.Commit(ctx, &txn); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		total += time.Since(start)
	}
	b.ReportMetric(float64(jobs*b.N)/total.Seconds(), "commits/s")
}

// BenchmarkRecover100k opens a store whose log holds a 100,000-job
// submission, then one whose snapshot does.
func BenchmarkRecover100k(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "log"
		if compact {
			name = "snapshot"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			dir := b.TempDir()
			l := openT(b, dir, Options{CompactRatio: -1})
			if err := l.Commit(context.Background(), submission(1, 100_000)); err != nil {
				b.Fatal(err)
			}
			if compact {
				if err := l.Compact(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			l.Close()
			for b.Loop() {
				l := openT(b, dir, Options{CompactRatio: -1})
				if l.Len() != 100_000 {
					b.Fatalf("recovered %d jobs", l.Len())
				}
				l.Close()
			}
		})
	}
}

// BenchmarkScan100k walks a queue of 100,000 jobs, as a query does.
func BenchmarkScan100k(b *testing.B) {
	b.ReportAllocs()
	l := openT(b, b.TempDir(), Options{NoSync: true, CompactRatio: -1})
	defer l.Close()
	if err := l.Commit(context.Background(), submission(1, 100_000)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		n := 0
		l.Scan(func(JobID, *classad.ClassAd) bool { n++; return true })
	}
}

// BenchmarkRetire64 retires 10,000 jobs, one Retire transaction each, from
// 64 goroutines, durably: each moves a job's final ad from the queue to
// the history, where the log and then the history file are synced, with
// group commit sharing both syncs.
func BenchmarkRetire64(b *testing.B) {
	b.ReportAllocs()
	const jobs, workers = 10_000, 64
	l := openT(b, b.TempDir(), Options{})
	defer l.Close()
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		c, err := l.NextCluster(ctx, "alice")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Commit(ctx, submission(c, jobs)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for p := w; p < jobs; p += workers {
					ad, _ := l.Get(JobID{c, p})
					ad.SetInt("JobStatus", 4)
					var txn Txn
					txn.Retire(JobID{c, p}, ad)
					if err := l.Commit(ctx, &txn); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		total += time.Since(start)
	}
	b.ReportMetric(float64(jobs*b.N)/total.Seconds(), "retires/s")
}

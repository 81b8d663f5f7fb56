package dagman

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/joblog"
)

// wideAndLong is a DAG of n nodes: a root with n/2 children (fan-out), and
// a chain of the other n/2-1 nodes, one PARENT line per edge.
func wideAndLong(n int) []byte {
	var b strings.Builder
	b.WriteString("JOB root job.sub\n")
	half := n / 2
	for i := 0; i < half; i++ {
		fmt.Fprintf(&b, "JOB f%d job.sub\nPARENT root CHILD f%d\n", i, i)
	}
	for i := 0; i < n-half-1; i++ {
		fmt.Fprintf(&b, "JOB c%d job.sub\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "PARENT c%d CHILD c%d\n", i-1, i)
		}
	}
	return []byte(b.String())
}

// BenchmarkParse parses a 100,000-node DAG file; retained-MB is the heap
// the parsed DAG keeps.
func BenchmarkParse(b *testing.B) {
	src := wideAndLong(100_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dag, err := Parse(src, "bench.dag", ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(dag)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src, "bench.dag", ParseOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "retained-MB")
}

// BenchmarkEngine runs a whole DAG whose jobs end as they are submitted:
// the engine's cost per node (submission, reading the node's three events
// from the log, readying its children), without a pool's.
func BenchmarkEngine(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "bench.dag")
			if err := os.WriteFile(path, wideAndLong(n), 0o644); err != nil {
				b.Fatal(err)
			}
			dag, err := ParseFile(path, ParseOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := time.Now()
			runs := 0
			for b.Loop() {
				res, err := Run(context.Background(), dag, newInstantPool(), Options{})
				if err != nil || res.Done != n {
					b.Fatalf("%+v %v", res, err)
				}
				runs++
			}
			b.ReportMetric(float64(n*runs)/time.Since(start).Seconds(), "nodes/s")
		})
	}
}

// BenchmarkRecovery restarts a 100,000-node DAG whose process died after
// all its jobs ended: the time to read the nodes log and rebuild the state.
func BenchmarkRecovery(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.dag")
	if err := os.WriteFile(path, wideAndLong(n), 0o644); err != nil {
		b.Fatal(err)
	}
	dag, err := ParseFile(path, ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// The log of a finished run, in the order the engine ran it.
	f, err := os.Create(path + ".nodes.log")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i, node := range dag.Nodes {
		c := i + 1
		f.WriteString(joblog.Event{Type: joblog.Submit, Cluster: c, Time: now, Host: "127.0.0.1:0", DAGNode: node.Name}.Format() +
			joblog.Event{Type: joblog.Execute, Cluster: c, Time: now, Host: "127.0.0.1:1"}.Format() +
			joblog.Event{Type: joblog.Terminated, Cluster: c, Time: now, Normal: true}.Format())
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path + ".nodes.log")
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(path+".lock", []byte("1\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := Run(context.Background(), dag, newInstantPool(), Options{})
		if err != nil || !res.Recovered || res.Done != n {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkSpool times, in one pool, alternately: a plain submission of
// a held job with a 256 MiB input (the baseline: the tool and the
// agent's commit, no data), the same submission with -spool (the input
// sent to the agent over its Unix socket, SHA-256 checked, written,
// made durable and moved into the owner's store), and harrier
// transfer-data of a completed spooled job's 256 MiB output into the
// submit directory (SHA-256 checked, renamed into place). It reports the
// medians: plain-submit-s, spool-MB/s, fetch-MB/s.
//
//	go test ./cmd/harrier -run XXX -bench Spool -benchtime 3x -v
func BenchmarkSpool(b *testing.B) {
	const size = 256 << 20
	p := startPool(b, 1)
	dir := b.TempDir()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, "data.bin"), string(data), 0o644)
	writeFile(b, filepath.Join(dir, "held.sub"), "executable = /bin/true\nshould_transfer_files = YES\ntransfer_input_files = data.bin\nhold = true\nqueue\n", 0o644)
	writeFile(b, filepath.Join(dir, "copy.sub"), "executable = /bin/cp\narguments = data.bin out.bin\nshould_transfer_files = YES\ntransfer_input_files = data.bin\nqueue\n", 0o644)
	submit := func(args ...string) (string, time.Duration) {
		began := time.Now()
		out := p.must(b, append([]string{"submit"}, args...)...)
		took := time.Since(began)
		var n, c int
		if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &c); err != nil {
			b.Fatalf("submit said %q: %v", out, err)
		}
		return fmt.Sprintf("%d.0", c), took
	}
	var plain, spool, fetch []float64
	b.ResetTimer()
	for b.Loop() {
		id1, t1 := submit(filepath.Join(dir, "held.sub"))
		id2, t2 := submit("-spool", filepath.Join(dir, "held.sub"))
		plain = append(plain, t1.Seconds())
		spool = append(spool, float64(size)/1e6/t2.Seconds())
		p.must(b, "rm", id1, id2)

		id, _ := submit("-spool", filepath.Join(dir, "copy.sub"))
		eventually(b, 5*time.Minute, "job "+id+" completed", func() bool { return p.jobStatus(b, id) == 4 })
		began := time.Now()
		p.must(b, "transfer-data", id)
		fetch = append(fetch, float64(size)/1e6/time.Since(began).Seconds())
		if err := os.Remove(filepath.Join(dir, "out.bin")); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(median(plain), "plain-submit-s")
	b.ReportMetric(median(spool), "spool-MB/s")
	b.ReportMetric(median(fetch), "fetch-MB/s")
	b.Logf("plain submit s %v; spool MB/s %v; fetch MB/s %v", plain, spool, fetch)
}

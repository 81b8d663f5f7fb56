package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/timeseries"
)

// fullHistory is a history whose rings are full: a day by the minute and
// a month by the hour.
func fullHistory(series []string) *timeseries.Store {
	h := timeseries.New(series, timeseries.DefaultResolutions)
	now := time.Now()
	values := make([]float64, len(series))
	for i := 31 * 24 * 60; i >= 0; i-- {
		for k := range values {
			values[k] = float64((i + k) % 100)
		}
		h.Add(now.Add(-time.Duration(i)*time.Minute), values)
	}
	return h
}

func benchmarkPage(b *testing.B, h http.Handler, target string) {
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", target, rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// BenchmarkPoolPage renders the matchmaker's overview of 1,000 slots
// with a full day's history of its seven series.
func BenchmarkPoolPage(b *testing.B) {
	var machines []*classad.ClassAd
	for i := range 1000 {
		ad, _ := classad.Parse(fmt.Sprintf(`[ Name = "slot1@m%d"; State = "Claimed"; Activity = "Busy"; Cpus = 1; Memory = 1024 ]`, i))
		machines = append(machines, ad)
	}
	pool := fakePool{ads: map[string][]*classad.ClassAd{matchmaker.TypeMachine: machines}}
	h := NewPool(pool, fullHistory(PoolSeries), "matchmaker", slog.New(slog.DiscardHandler))
	for _, r := range []string{"day", "month"} {
		b.Run(r, func(b *testing.B) { benchmarkPage(b, h, "/?range="+r) })
	}
}

// BenchmarkQueuePage renders an agent's page of 1,000 jobs with a full
// day's history.
func BenchmarkQueuePage(b *testing.B) {
	var q fakeQueue
	for i := range 1000 {
		ad, _ := classad.Parse(fmt.Sprintf(`[ ClusterId = %d; ProcId = 0; Owner = "u%d"; Cmd = "/bin/sleep"; Arguments = "60"; JobStatus = %d; QDate = 1764000000; NumJobStarts = 1 ]`, i+1, i%10, 1+i%2))
		q.jobs = append(q.jobs, ad)
	}
	h := NewQueue(q, fullHistory(QueueSeries), "agent", slog.New(slog.DiscardHandler))
	b.Run("all", func(b *testing.B) { benchmarkPage(b, h, "/") })
	b.Run("owner", func(b *testing.B) { benchmarkPage(b, h, "/?owner=u3&state=Running") })
}

package matchmaker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A cycle's statistics reach the metrics, and recording them allocates
// nothing: the negotiator's cycle gains no garbage from being measured.
func TestCycleMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newCycleMetrics(reg)
	s := CycleStats{Duration: 3 * time.Millisecond, Snapshot: time.Millisecond,
		Phases:  Phases{MatchLists: time.Millisecond, Allocate: time.Millisecond},
		Matches: 2, Rejections: 1, Preemptions: 1, IdleJobs: 3, CandidateSlots: 4, Submitters: 2}
	if allocs := testing.AllocsPerRun(100, func() { m.record(&s) }); allocs != 0 {
		t.Errorf("recording a cycle allocates %v times", allocs)
	}
	runs := 101.0 // AllocsPerRun's warm-up and its 100 runs
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"cycles", m.cycles, runs}, {"matches", m.matches, 2 * runs}, {"rejections", m.rejections, runs},
		{"preemptions", m.preemptions, runs}, {"idle jobs", m.idleJobs, 3}, {"candidate slots", m.slots, 4},
		{"submitters", m.submitters, 2},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(reg, "harrier_negotiation_phase_duration_seconds"); n != len(phaseNames) {
		t.Errorf("%d phase histograms, want %d", n, len(phaseNames))
	}
}

// BenchmarkCycleMetrics is what measuring adds to each negotiation cycle.
func BenchmarkCycleMetrics(b *testing.B) {
	m := newCycleMetrics(prometheus.NewRegistry())
	s := CycleStats{Duration: 3 * time.Millisecond, Matches: 2}
	b.ReportAllocs()
	for b.Loop() {
		m.record(&s)
	}
}

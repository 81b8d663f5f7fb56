package matchmaker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cycleMetrics are the negotiator's Prometheus metrics. They are updated
// once a cycle, from its CycleStats, never inside matching: the cycle's
// hot paths stay as they are, and recording a cycle allocates nothing
// (the phases' histograms are bound once, here).
type cycleMetrics struct {
	cycles      prometheus.Counter
	duration    prometheus.Histogram
	phases      [7]prometheus.Observer // in the order of phaseNames
	matches     prometheus.Counter
	rejections  prometheus.Counter
	preemptions prometheus.Counter
	idleJobs    prometheus.Gauge
	slots       prometheus.Gauge
	submitters  prometheus.Gauge
}

// phaseNames label harrier_negotiation_phase_duration_seconds: the
// snapshot of the collector's ads, then Phases' fields in order.
var phaseNames = [7]string{"snapshot", "requests", "classify", "index", "matchlists", "allocate", "preempt"}

func newCycleMetrics(reg prometheus.Registerer) *cycleMetrics {
	// From a small pool's milliseconds to a large one's minutes.
	buckets := prometheus.ExponentialBuckets(0.0005, 4, 10)
	phases := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "harrier_negotiation_phase_duration_seconds", Buckets: buckets,
		Help: "Time a negotiation cycle spent in each of its phases.",
	}, []string{"phase"})
	m := &cycleMetrics{
		cycles: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_negotiation_cycles_total",
			Help: "Negotiation cycles run."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "harrier_negotiation_cycle_duration_seconds",
			Help: "Time a negotiation cycle took, from the snapshot of the ads to the last match recorded.", Buckets: buckets}),
		matches: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_negotiation_matches_total",
			Help: "Jobs matched to machines (a gang's match counts once)."}),
		rejections: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_negotiation_rejections_total",
			Help: "Resource requests a cycle found no machine for."}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_negotiation_preemptions_total",
			Help: "Matches that preempt a running claim."}),
		idleJobs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "harrier_negotiation_idle_jobs",
			Help: "Idle jobs the agents offered to the last cycle."}),
		slots: prometheus.NewGauge(prometheus.GaugeOpts{Name: "harrier_negotiation_candidate_slots",
			Help: "Slots the last cycle could match."}),
		submitters: prometheus.NewGauge(prometheus.GaugeOpts{Name: "harrier_negotiation_submitters",
			Help: "Submitters with idle jobs in the last cycle."}),
	}
	for i, p := range phaseNames {
		m.phases[i] = phases.WithLabelValues(p)
	}
	reg.MustRegister(m.cycles, m.duration, phases, m.matches, m.rejections, m.preemptions, m.idleJobs, m.slots, m.submitters)
	return m
}

// record counts a finished cycle.
func (m *cycleMetrics) record(s *CycleStats) {
	m.cycles.Inc()
	m.duration.Observe(s.Duration.Seconds())
	for i, d := range [7]time.Duration{s.Snapshot, s.Phases.Requests, s.Phases.Classify, s.Phases.Index,
		s.Phases.MatchLists, s.Phases.Allocate, s.Phases.Preempt} {
		m.phases[i].Observe(d.Seconds())
	}
	m.matches.Add(float64(s.Matches))
	m.rejections.Add(float64(s.Rejections))
	m.preemptions.Add(float64(s.Preemptions))
	m.idleJobs.Set(float64(s.IdleJobs))
	m.slots.Set(float64(s.CandidateSlots))
	m.submitters.Set(float64(s.Submitters))
}

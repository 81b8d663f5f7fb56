package startd

import (
	"github.com/prometheus/client_golang/prometheus"
)

// startdMetrics are the startd's Prometheus metrics: its slots, read at
// each scrape under the startd's lock, and the jobs it started.
type startdMetrics struct {
	s           *Startd
	slots       *prometheus.Desc
	starters    *prometheus.Desc
	activations prometheus.Counter
}

func newStartdMetrics(s *Startd, reg prometheus.Registerer) *startdMetrics {
	m := &startdMetrics{
		s: s,
		slots: prometheus.NewDesc("harrier_startd_slots",
			"Slots by state and activity, as the machine's ads show them.", []string{"state", "activity"}, nil),
		starters: prometheus.NewDesc("harrier_startd_starters",
			"Starters running a job (the slots whose claim has a job active).", nil, nil),
		activations: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_startd_job_starts_total",
			Help: "Jobs whose starter the startd started (claims activated)."}),
	}
	reg.MustRegister(m, m.activations)
	return m
}

// Describe implements prometheus.Collector.
func (m *startdMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.slots
	ch <- m.starters
}

// Collect implements prometheus.Collector.
func (m *startdMetrics) Collect(ch chan<- prometheus.Metric) {
	counts := map[Status]int{}
	starters := 0
	m.s.mu.Lock()
	for _, sl := range m.s.slots {
		counts[sl.phase.status()]++
		if runOf(sl.phase) != nil {
			starters++
		}
	}
	m.s.mu.Unlock()
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.slots, prometheus.GaugeValue, float64(n), string(st.State), string(st.Activity))
	}
	ch <- prometheus.MustNewConstMetric(m.starters, prometheus.GaugeValue, float64(starters))
}

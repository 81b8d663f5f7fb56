package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
)

// TestMetrics: every daemon of a pool serves /metrics, found through the
// address it wrote to the RUN directory, in Prometheus's text format (read
// with Prometheus's own parser); after a job ran, the agent counted its
// start and its exit and its queue's states, the matchmaker its cycles and
// match, the startd the job it started, and each daemon the calls it
// served.
func TestMetrics(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	c := p.submit(t, dir, "hi.sub", "executable = /bin/sh\narguments = \"-c 'echo hi'\"\noutput = hi.out\nqueue\n")
	if out, code := p.harrier(t, "wait", "--timeout", "120", fmt.Sprintf("%d.0", c)); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	host := hostName()
	run := filepath.Join(p.dir, "run")
	scrape := func(name string) map[string]*dto.MetricFamily {
		t.Helper()
		addr, err := os.ReadFile(metricsFile(run, name))
		if err != nil {
			t.Fatalf("%s wrote no metrics address: %v", name, err)
		}
		resp, err := http.Get("http://" + strings.TrimSpace(string(addr)) + "/metrics")
		if err != nil {
			t.Fatalf("scrape %s: %v", name, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %s: %s", name, resp.Status)
		}
		parser := expfmt.NewTextParser(prommodel.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parse %s's metrics: %v", name, err)
		}
		return families
	}
	// value is the value of family's metric whose labels include labels
	// (name=value pairs); -1 if there is none.
	value := func(families map[string]*dto.MetricFamily, family string, labels ...string) float64 {
		f := families[family]
		if f == nil {
			return -1
		}
	metrics:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.Label {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		return -1
	}
	// rpcCalls is how many calls of method the daemon measured.
	rpcCalls := func(families map[string]*dto.MetricFamily, method string) float64 {
		return value(families, "harrier_rpc_server_duration_seconds", "method", method)
	}

	// The agent counts on its own schedule (the queue's gauges at each
	// advertisement).
	eventually(t, 60*time.Second, "the agent's queue gauges to show the job gone", func() bool {
		a := scrape("agent")
		return value(a, "harrier_agent_jobs", "state", "Idle") == 0 && value(a, "harrier_agent_jobs", "state", "Running") == 0
	})
	a := scrape("agent")
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"harrier_agent_job_starts_total", nil, 1},
		{"harrier_agent_job_exits_total", []string{"outcome", "exited"}, 1},
		{"harrier_agent_job_exits_total", []string{"outcome", "evicted"}, 0},
		{"harrier_agent_shadows", nil, 0},
		{"harrier_agent_jobs", []string{"state", "Held"}, 0},
	} {
		if got := value(a, c.family, c.labels...); got != c.want {
			t.Errorf("agent: %s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if n := rpcCalls(a, "/harrier.v1.Schedd/Submit"); n < 1 {
		t.Errorf("agent measured %v submit calls", n)
	}
	checkHistogram(t, a, "harrier_rpc_server_duration_seconds")

	mm := scrape("matchmaker")
	if n := value(mm, "harrier_negotiation_cycles_total"); n < 1 {
		t.Errorf("matchmaker: %v negotiation cycles", n)
	}
	if n := value(mm, "harrier_negotiation_matches_total"); n < 1 {
		t.Errorf("matchmaker: %v matches", n)
	}
	if n := value(mm, "harrier_negotiation_phase_duration_seconds", "phase", "matchlists"); n < 1 {
		t.Errorf("matchmaker: %v observations of the matchlists phase", n)
	}
	if n := rpcCalls(mm, "/harrier.v1.Collector/Advertise"); n < 1 {
		t.Errorf("matchmaker measured %v advertisements", n)
	}
	checkHistogram(t, mm, "harrier_negotiation_cycle_duration_seconds")

	sd := scrape(host)
	if n := value(sd, "harrier_startd_job_starts_total"); n != 1 {
		t.Errorf("startd: %v job starts, want 1", n)
	}
	if n := value(sd, "harrier_startd_starters"); n != 0 {
		t.Errorf("startd: %v starters after the job, want 0", n)
	}
	if n := rpcCalls(sd, "/harrier.v1.Startd/ActivateClaim"); n != 1 {
		t.Errorf("startd measured %v activations, want 1", n)
	}

	ms := scrape("master." + host)
	if value(ms, "process_start_time_seconds") <= 0 {
		t.Errorf("master: no process_start_time_seconds")
	}
}

// checkHistogram fails t unless every histogram of family in families has
// samples whose sum is non-negative and whose buckets never decrease.
func checkHistogram(t *testing.T, families map[string]*dto.MetricFamily, family string) {
	t.Helper()
	f := families[family]
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("no histogram %s", family)
		return
	}
	for _, m := range f.Metric {
		h := m.Histogram
		if h.GetSampleSum() < 0 {
			t.Errorf("%s %v: sum %v", family, m.Label, h.GetSampleSum())
		}
		last := uint64(0)
		for _, b := range h.Bucket {
			if b.GetCumulativeCount() < last || b.GetCumulativeCount() > h.GetSampleCount() {
				t.Errorf("%s %v: bucket %v counts %d of %d", family, m.Label, b.GetUpperBound(), b.GetCumulativeCount(), h.GetSampleCount())
			}
			last = b.GetCumulativeCount()
		}
	}
}

package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/shadow"
)

// agentMetrics are the agent's Prometheus metrics. They carry no owner or
// job labels: per-user figures are the accountant's (harrier userprio),
// and a label per user would grow without bound with the pool's users.
type agentMetrics struct {
	jobs        map[JobStatus]prometheus.Gauge // by state, every state bound
	starts      prometheus.Counter
	exits       map[string]prometheus.Counter // by outcome (exitOutcomes)
	shadows     prometheus.Gauge
	transfer    [2]prometheus.Counter // input, output
	remoteIO    [2]prometheus.Counter // read, written
	checkpoints map[string]prometheus.Counter
	ckptFailed  prometheus.Counter
	ckptBytes   prometheus.Counter
	ckptFrozen  prometheus.Histogram
	ckptDump    prometheus.Histogram
}

// The outcomes of a job's run that harrier_agent_job_exits_total counts.
const (
	outcomeExited  = "exited"  // the job's program exited
	outcomeHeld    = "held"    // the run ended in a hold
	outcomeEvicted = "evicted" // vacated or preempted, to run again
	outcomeFailed  = "failed"  // failed for reasons not the user's, to run again
	outcomeRemoved = "removed" // removed while it ran
)

var exitOutcomes = []string{outcomeExited, outcomeHeld, outcomeEvicted, outcomeFailed, outcomeRemoved}

func newAgentMetrics(reg prometheus.Registerer) *agentMetrics {
	jobs := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "harrier_agent_jobs",
		Help: "Jobs in the queue by state, as the agent last counted them (every advertisement)."}, []string{"state"})
	exits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "harrier_agent_job_exits_total",
		Help: "Job runs that ended, by outcome: exited, held, evicted, failed, removed."}, []string{"outcome"})
	transfer := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "harrier_agent_transfer_bytes_total",
		Help: "Bytes of files transferred for jobs (should_transfer_files), by direction: input or output."}, []string{"direction"})
	remoteIO := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "harrier_agent_remote_io_bytes_total",
		Help: "Bytes jobs read from and wrote to submit-side files through remote I/O, by direction: read or write; counted when a run ends."}, []string{"direction"})
	ckpts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "harrier_agent_checkpoints_total",
		Help: "Checkpoints stored, by kind: criu (a container's image) or self (a self-checkpointing job's files)."}, []string{"kind"})
	// From a small job's tenth of a second to a large one's minutes.
	buckets := prometheus.ExponentialBuckets(0.05, 3, 9)
	m := &agentMetrics{
		jobs:  map[JobStatus]prometheus.Gauge{},
		exits: map[string]prometheus.Counter{},
		starts: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_agent_job_starts_total",
			Help: "Job runs that started executing."}),
		shadows: prometheus.NewGauge(prometheus.GaugeOpts{Name: "harrier_agent_shadows",
			Help: "Shadow processes running."}),
		transfer:    [2]prometheus.Counter{transfer.WithLabelValues("input"), transfer.WithLabelValues("output")},
		remoteIO:    [2]prometheus.Counter{remoteIO.WithLabelValues("read"), remoteIO.WithLabelValues("write")},
		checkpoints: map[string]prometheus.Counter{"criu": ckpts.WithLabelValues("criu"), "self": ckpts.WithLabelValues("self")},
		ckptFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_agent_checkpoint_failures_total",
			Help: "Checkpoints that could not be taken or stored."}),
		ckptBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "harrier_agent_checkpoint_bytes_total",
			Help: "Bytes of checkpoints stored in the agent's image stores."}),
		ckptFrozen: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "harrier_agent_checkpoint_frozen_seconds",
			Help: "How long a CRIU checkpoint kept its job frozen.", Buckets: buckets}),
		ckptDump: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "harrier_agent_checkpoint_dump_seconds",
			Help: "How long CRIU took to dump a job.", Buckets: buckets}),
	}
	for _, s := range []JobStatus{Idle, Running, Removed, Completed, Held, TransferringOutput, Suspended} {
		m.jobs[s] = jobs.WithLabelValues(s.String())
	}
	for _, o := range exitOutcomes {
		m.exits[o] = exits.WithLabelValues(o)
	}
	reg.MustRegister(jobs, m.starts, exits, m.shadows, transfer, remoteIO, ckpts, m.ckptFailed, m.ckptBytes, m.ckptFrozen, m.ckptDump)
	return m
}

// queue sets the queue's gauges from a count of its jobs by state.
func (m *agentMetrics) queue(counts map[JobStatus]int64) {
	for s, g := range m.jobs {
		g.Set(float64(counts[s]))
	}
}

// ended counts a run that ended with outcome and its final event's remote
// I/O.
func (m *agentMetrics) ended(outcome string, ev shadow.Event) {
	m.exits[outcome].Inc()
	rio := newRunIO(ev.Files)
	m.remoteIO[0].Add(float64(rio.readBytes))
	m.remoteIO[1].Add(float64(rio.writeBytes))
}

// transferred counts a finished transfer.
func (m *agentMetrics) transferred(t *shadow.TransferStats) {
	if !t.Finished {
		return
	}
	i := 0
	if t.Output {
		i = 1
	}
	m.transfer[i].Add(float64(t.Bytes))
}

// checkpointed counts a stored checkpoint.
func (m *agentMetrics) checkpointed(ev shadow.Event) {
	if ev.Type == shadow.EventSelfCheckpointed {
		m.checkpoints["self"].Inc()
	} else {
		m.checkpoints["criu"].Inc()
		m.ckptFrozen.Observe(ev.FrozenSeconds)
		m.ckptDump.Observe(ev.DumpSeconds)
	}
	m.ckptBytes.Add(float64(ev.StoredBytes))
}

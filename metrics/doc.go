// Package metrics serves a daemon's statistics in Prometheus's exposition
// format and measures the gRPC calls it serves.
//
// Each daemon owns a [prometheus.Registry] and hands it to the parts that
// count (never the default registry: two daemons in one process, as in
// tests, keep their figures apart). Parts update their metrics where a
// piece of work ends (a negotiation cycle, a job's exit), never per
// ClassAd evaluation, and bind label values outside loops. Every metric is
// named harrier_...; docs/metrics.md lists them.
package metrics

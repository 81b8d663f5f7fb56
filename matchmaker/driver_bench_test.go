package matchmaker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/wire"
)

// BenchmarkDriverCycle is a whole negotiation cycle as the matchmaker
// runs it (the snapshot, the negotiation, the statistics, the Negotiator
// ad and the metrics) over 100 machines and 1,000 jobs none of which
// fits, so that every cycle does the same work.
func BenchmarkDriverCycle(b *testing.B) {
	clock := newFakeClock()
	c := NewCollector(clock)
	d := &driver{
		log: quietLogger(), collector: c, notifier: newFakeNotifier(), clock: clock, name: "negotiator@test",
		metrics:  newCycleMetrics(prometheus.NewRegistry()),
		interval: time.Hour, debounce: time.Hour, kick: make(chan struct{}, 1), sem: make(chan struct{}, 1),
	}
	e := &collectorEndpoint{collector: c, kick: d.Kick, defaultLease: time.Hour}
	for i := range 100 {
		name := fmt.Sprintf("slot1@host%d", i)
		if _, err := e.Advertise(asStartd, &wire.AdvertiseRequest{Type: TypeMachine, Name: name, Ad: machineText(name, StateUnclaimed, 1024<<(i%4), "")}); err != nil {
			b.Fatal(err)
		}
	}
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = jobText(i/100, i%100, fmt.Sprintf("u%d", i%10), fmt.Sprintf("QDate = %d; Rank = TARGET.Memory; RequestGPUs = 1; Requirements = TARGET.GPUs >= 1", i))
	}
	if _, err := e.AdvertiseJobs(asAgent, &wire.AdvertiseJobsRequest{Agent: "ag", AgentAddr: "ag:9", Ads: texts}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if s := d.cycle(ctx); s.Matches != 0 || s.IdleJobs != len(texts) {
		b.Fatalf("a cycle matched %d of %d idle jobs, want none of %d", s.Matches, s.IdleJobs, len(texts))
	}
	b.ReportAllocs()
	for b.Loop() {
		d.cycle(ctx)
	}
}

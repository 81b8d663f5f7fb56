package matchmaker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/classad"
)

// The Negotiator ad publishes the latest cycles, HTCondor's suffixes 0 to
// 2, and a restarted matchmaker publishes those of its predecessor after
// its own.
func TestCycleStatsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "negotiator.json")
	clock := newFakeClock()
	newDriver := func(cycles []CycleStats) (*driver, *Collector) {
		c := NewCollector(clock)
		return &driver{
			log: quietLogger(), collector: c, notifier: newFakeNotifier(), clock: clock, name: "negotiator@test",
			metrics:  newCycleMetrics(prometheus.NewRegistry()),
			interval: time.Hour, debounce: time.Hour, kick: make(chan struct{}, 1), sem: make(chan struct{}, 1),
			cycles: cycles, statsFile: path,
		}, c
	}
	cycleTimes := func(c *Collector) []int64 {
		ads := c.Query(TypeNegotiator, classad.Expr{})
		if len(ads) != 1 {
			t.Fatalf("negotiator ads %v", ads)
		}
		var times []int64
		for _, n := range []string{"0", "1", "2", "3"} {
			if v, ok := ads[0].EvalInt("LastNegotiationCycleTime" + n); ok {
				times = append(times, v)
			}
		}
		return times
	}
	d, _ := newDriver(nil)
	for range 2 {
		d.cycle(context.Background())
		clock.Advance(time.Minute)
	}
	d.saveState()

	cycles, err := loadCycleStats(path)
	if err != nil {
		t.Fatal(err)
	}
	d2, c2 := newDriver(cycles)
	d2.cycle(context.Background())
	got := cycleTimes(c2)
	t0 := d.cycles[1].Start.Unix()
	want := []int64{t0 + 120, t0 + 60, t0}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("cycle times after the restart %v, want %v (latest first, three kept)", got, want)
	}

	for _, content := range []string{`{"format": 1, "cycles": [`, `{"format": 9}`} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadCycleStats(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("loading %q: %v, want an error naming the file", content, err)
		}
	}
}

package matchmaker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// The negotiator gives a request machines only while its job's
// concurrency limits have room, counting the uses of claimed and
// matched slots, of a partitionable slot's matches not yet advertised,
// and of the cycle's own matches; named limits, set defaults and the
// default apply in that order; a job without limits is not held back.
func TestNegotiateConcurrencyLimits(t *testing.T) {
	limits := &Limits{Max: map[string]float64{"sw": 2}, SetDefault: map[string]float64{"large": 2}, Default: 1, HasDefault: true}
	var machines []Machine
	for i := range 8 {
		machines = append(machines, machine(t, fmt.Sprintf("slot%d@a", i+1), StateUnclaimed, 1024, ""))
	}
	// Held: one sw by a claim; one large.x by a match the startd has not
	// answered; one large.y by a partitionable slot's pending match (an
	// Unclaimed slot's own ConcurrencyLimits, left from a past claim,
	// counts for nothing).
	machines = append(machines,
		machine(t, "slot1@claimed", "Claimed", 1024, `ConcurrencyLimits = "SW"`),
		machine(t, "slot1@matched", StateMatched, 1024, `ConcurrencyLimits = "large.x"`),
		machine(t, "slot1@idle", StateUnclaimed, 1, `ConcurrencyLimits = "other"; PendingConcurrencyLimits = { "large.y" }`))
	jobs := []Request{
		job(t, "ag", 1, 0, "alice", `ConcurrencyLimits = "sw"`),
		job(t, "ag", 1, 1, "alice", `ConcurrencyLimits = "sw"`),      // sw full: 1 held + 1.0
		job(t, "ag", 2, 0, "alice", `ConcurrencyLimits = "db:2"`),    // over the default of 1
		job(t, "ag", 3, 0, "alice", `ConcurrencyLimits = "LARGE.x"`), // the set's 2 each: 1 held
		job(t, "ag", 3, 1, "alice", `ConcurrencyLimits = "large.x"`),
		job(t, "ag", 4, 0, "alice", `ConcurrencyLimits = "other"`),
		job(t, "ag", 5, 0, "alice", ""),
		job(t, "ag", 5, 1, "alice", ""),
	}
	res := Negotiator{Limits: limits}.Negotiate(jobs, machines)
	var got []string
	for _, m := range res.Matches {
		got = append(got, m.Job.ID)
	}
	if want := []string{"1.0", "3.0", "4.0", "5.0", "5.1"}; !slices.Equal(got, want) {
		t.Errorf("matched %v, want %v", got, want)
	}
	if want := map[string]float64{"sw": 2, "large.x": 2, "large.y": 1, "other": 1}; !maps.Equal(res.LimitsInUse, want) {
		t.Errorf("limits in use %v, want %v", res.LimitsInUse, want)
	}
	// Without limits, every job gets a machine.
	if res := (Negotiator{}).Negotiate(jobs, machines); len(res.Matches) != 8 || res.LimitsInUse != nil {
		t.Errorf("without limits: %d matches, in use %v", len(res.Matches), res.LimitsInUse)
	}
}

// A request at its limit preempts nothing either.
func TestConcurrencyLimitsBoundPreemption(t *testing.T) {
	machines := []Machine{
		machine(t, "slot1@a", "Claimed", 1024, `RemoteOwner = "bob"; CurrentRank = 0; Rank = 1; ConcurrencyLimits = "sw"`),
		machine(t, "slot1@b", "Claimed", 1024, `RemoteOwner = "bob"; CurrentRank = 0; Rank = 1`),
	}
	jobs := []Request{job(t, "ag", 1, 0, "alice", `ConcurrencyLimits = "sw"`)}
	n := Negotiator{Limits: &Limits{Max: map[string]float64{"sw": 1}}}
	if res := n.Negotiate(jobs, machines); len(res.Matches) != 0 {
		t.Errorf("a job at its limit preempted: %v", pairs(res))
	}
	n.Limits.Max["sw"] = 2
	if res := n.Negotiate(jobs, machines); len(res.Matches) != 1 || res.Matches[0].Preempts == nil {
		t.Errorf("a job within its limit did not preempt: %v", pairs(res))
	}
}

// The collector's copy of a matched slot carries the job's limits until
// the startd advertises: a static slot's as its own, a partitionable
// slot's in its list of pending ones.
func TestClaimKeepsConcurrencyLimits(t *testing.T) {
	c := NewCollector(newFakeClock())
	static := machine(t, "slot1@a", StateUnclaimed, 1024, "")
	part := machine(t, "slot1@p", StateUnclaimed, 4096, `PartitionableSlot = true; Cpus = 4; Disk = 1000000; TotalSlotCpus = 4; TotalSlotMemory = 4096`)
	for _, m := range []Machine{static, part} {
		c.Advertise(TypeMachine, m.Name, m.Ad, time.Hour)
	}
	r := job(t, "ag", 1, 0, "alice", `ConcurrencyLimits = "sw"; RequestCpus = 1; RequestMemory = 100`)
	c.Claim(Match{Job: Job{ID: "1.0", Ad: r.Ad}, Machine: static})
	c.Claim(Match{Job: Job{ID: "1.1", Ad: r.Ad}, Machine: part})
	c.Claim(Match{Job: Job{ID: "1.2", Ad: r.Ad}, Machine: part})
	_, machines := c.Snapshot()
	counter := newLimitCounter(&Limits{Max: map[string]float64{"sw": 5}}, machines)
	if counter.used["sw"] != 3 {
		var ads []string
		for _, m := range machines {
			ads = append(ads, m.Ad.String())
		}
		t.Errorf("sw in use %v, want 3: %s", counter.used["sw"], strings.Join(ads, "\n"))
	}
}

func TestLimitsFromConfig(t *testing.T) {
	cfg := map[string]string{"XSW_LIMIT": "4", "CONCURRENCY_LIMIT_DEFAULT": "2", "CONCURRENCY_LIMIT_DEFAULT_SMALL": "3",
		"SCRATCH_LIMIT": "100", "NEGOTIATOR_INTERVAL": "5", "db_limit": "1.5"}
	var keys []string
	for k := range cfg {
		keys = append(keys, k)
	}
	l, err := LimitsFromConfig(keys, func(k string) string { return cfg[k] }, map[string]bool{"SCRATCH_LIMIT": true})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"xsw": 4, "db": 1.5, "small.license": 3, "large.license": 2, "undefined": 2} {
		if got, ok := l.limitOf(name); !ok || got != want {
			t.Errorf("limit of %s = %v, %v; want %v", name, got, ok, want)
		}
	}
	if _, ok := l.Max["scratch"]; ok {
		t.Errorf("SCRATCH_LIMIT read as a concurrency limit")
	}
	cfg["XSW_LIMIT"] = "many"
	if _, err := LimitsFromConfig(keys, func(k string) string { return cfg[k] }, nil); err == nil || !strings.Contains(err.Error(), "XSW_LIMIT") {
		t.Errorf("a limit that is not a number: %v", err)
	}
	none, _ := LimitsFromConfig(nil, nil, nil)
	if _, ok := none.limitOf("x"); ok || !none.empty() {
		t.Errorf("no configuration limits x")
	}
}

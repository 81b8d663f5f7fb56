package defrag

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// pslot is the ad of an 8-core machine's partitionable slot with free
// cores left, as HTCondor (and Harrier's partitionable slots) advertise it.
func pslot(t *testing.T, machine string, free int, extra string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(fmt.Sprintf(`[ Machine = %q; PartitionableSlot = true; TotalSlotCpus = 8; Cpus = %d; %s ]`, machine, free, extra))
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func dslot(t *testing.T, machine string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(fmt.Sprintf(`[ Machine = %q; DynamicSlot = true; Cpus = 1; State = "Claimed" ]`, machine))
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func policy(t *testing.T, cfg Config) *Policy {
	t.Helper()
	p, err := Parse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlan(t *testing.T) {
	// a: 6 of 8 cores free; b: 2 free; c: whole; d: draining for the
	// loop, now whole; e: drained by an administrator, whole; f: not
	// partitionable; g: offline.
	ads := []*classad.ClassAd{
		pslot(t, "a", 6, ""), dslot(t, "a"), dslot(t, "a"),
		pslot(t, "b", 2, ""), dslot(t, "b"),
		pslot(t, "c", 8, ""),
		pslot(t, "d", 8, `Draining = true; DrainReason = "Defrag"`),
		pslot(t, "e", 8, `Draining = true; DrainReason = "by root"`),
		mustParse(t, `[ Machine = "f"; Cpus = 1; TotalCpus = 8 ]`),
		pslot(t, "g", 7, "Offline = true"),
	}
	machines := Machines(ads)
	if len(machines) != 7 || len(machines[0].Ads) != 1 {
		t.Fatalf("machines: %d, a has %d ads (dynamic slots should be left out)", len(machines), len(machines[0].Ads))
	}
	for _, c := range []struct {
		name      string
		cfg       Config
		allowance int
		drain     []string
		cancel    []string
	}{
		{"no allowance", Config{MaxConcurrent: -1, MaxWhole: -1}, 0, nil, []string{"d"}},
		{"by the default rank, ties by name", Config{MaxConcurrent: -1, MaxWhole: -1}, 1, []string{"a"}, []string{"d"}},
		{"every candidate", Config{MaxConcurrent: -1, MaxWhole: -1}, 10, []string{"a", "b"}, []string{"d"}},
		{"rank", Config{MaxConcurrent: -1, MaxWhole: -1, Rank: "-Cpus"}, 1, []string{"b"}, []string{"d"}},
		// e drains: one more makes two.
		{"max concurrent", Config{MaxConcurrent: 2, MaxWhole: -1}, 10, []string{"a"}, []string{"d"}},
		{"max concurrent reached", Config{MaxConcurrent: 1, MaxWhole: -1}, 10, nil, []string{"d"}},
		// c, d, e are whole, e also draining: 4 counted.
		{"max whole", Config{MaxConcurrent: -1, MaxWhole: 5}, 10, []string{"a"}, []string{"d"}},
		{"max whole reached", Config{MaxConcurrent: -1, MaxWhole: 4}, 10, nil, []string{"d"}},
		{"requirements", Config{MaxConcurrent: -1, MaxWhole: -1, Requirements: "PartitionableSlot =?= true"}, 10, []string{"a", "b", "g"}, []string{"d"}},
		{"cancel requirements", Config{MaxConcurrent: -1, MaxWhole: -1, CancelRequirements: "false"}, 0, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := policy(t, c.cfg).Plan(machines, c.allowance)
			if !slices.Equal(plan.Drain, c.drain) || !slices.Equal(plan.Cancel, c.cancel) {
				t.Errorf("drain %v, cancel %v; want %v, %v", plan.Drain, plan.Cancel, c.drain, c.cancel)
			}
		})
	}
}

// With static slots the whole-machine expression must hold on every slot.
func TestPlanStaticSlots(t *testing.T) {
	ads := []*classad.ClassAd{
		mustParse(t, `[ Machine = "x"; State = "Claimed" ]`), mustParse(t, `[ Machine = "x"; State = "Unclaimed" ]`),
		mustParse(t, `[ Machine = "y"; State = "Unclaimed" ]`), mustParse(t, `[ Machine = "y"; State = "Unclaimed" ]`),
	}
	p := policy(t, Config{MaxConcurrent: -1, MaxWhole: -1, Requirements: "true", WholeMachine: `State == "Unclaimed"`})
	plan := p.Plan(Machines(ads), 5)
	if !slices.Equal(plan.Drain, []string{"x"}) || plan.Whole != 1 || plan.Draining != 1 {
		t.Errorf("%+v; want x drained, y whole", plan)
	}
}

func TestParseRefuses(t *testing.T) {
	_, err := Parse(Config{Rank: "1 +", Schedule: "slow", PerHour: -1})
	for _, want := range []string{"DEFRAG_RANK", "DEFRAG_SCHEDULE", "DEFRAG_DRAINING_MACHINES_PER_HOUR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	p := policy(t, Config{})
	if p.Interval != DefaultInterval || p.Schedule != "migrate" {
		t.Errorf("defaults: %+v", p)
	}
}

func mustParse(t *testing.T, src string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// fakePool records the loop's drains and cancellations.
type fakePool struct {
	ads              []*classad.ClassAd
	drained, resumed []string
}

func (f *fakePool) Machines(context.Context) ([]*classad.ClassAd, error) { return f.ads, nil }
func (f *fakePool) Drain(_ context.Context, m, schedule, reason string) error {
	f.drained = append(f.drained, m+"/"+schedule+"/"+reason)
	return nil
}
func (f *fakePool) CancelDrain(_ context.Context, m string) error {
	f.resumed = append(f.resumed, m)
	return nil
}

// The rate is spread over the intervals: 3 machines an hour at 10
// minutes is one every other interval.
func TestCycleRate(t *testing.T) {
	pool := &fakePool{}
	for _, m := range []string{"a", "b", "c", "d"} {
		pool.ads = append(pool.ads, pslot(t, m, 4, ""))
	}
	p := policy(t, Config{Interval: 10 * time.Minute, PerHour: 3, MaxConcurrent: -1, MaxWhole: -1})
	d := New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var per []int
	for range 4 {
		before := len(pool.drained)
		if _, err := d.Cycle(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		per = append(per, len(pool.drained)-before)
		// The drained machine now shows it.
		for _, ad := range pool.ads {
			name, _ := ad.EvalString("Machine")
			for _, dr := range pool.drained {
				if strings.HasPrefix(dr, name+"/") {
					ad.SetBool("Draining", true)
					ad.SetString("DrainReason", Reason)
				}
			}
		}
	}
	if !slices.Equal(per, []int{0, 1, 0, 1}) {
		t.Errorf("drains per interval: %v, want [0 1 0 1]", per)
	}
	if pool.drained[0] != "a/migrate/Defrag" {
		t.Errorf("drained %v", pool.drained)
	}
}

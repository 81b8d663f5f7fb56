// Package defrag is Harrier's condor_defrag: a loop that reads the pool's
// machine ads and drains a few machines at a time, so that whole machines
// come free for the jobs that need one. Harrier drains by migration, so a
// defragmenting drain costs the moved jobs seconds of frozen time, not the
// work they had done.
//
// The policy (Plan) is a pure function of the ads and the configuration;
// the loop (Defrag) reads the ads and drains through a Pool.
package defrag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"harrier.dev/harrier/classad"
)

// Reason is the DrainReason of the drains the loop starts; only those it
// cancels.
const Reason = "Defrag"

// Config is the DEFRAG_* configuration, as HTCondor names it. Empty
// expressions select the defaults.
type Config struct {
	// Interval is DEFRAG_INTERVAL: how often the loop looks. Default 600 s.
	Interval time.Duration
	// PerHour is DEFRAG_DRAINING_MACHINES_PER_HOUR: how many machines
	// may start draining an hour, spread over the intervals (a fraction
	// left over carries to the next). Default 0: none.
	PerHour float64
	// MaxConcurrent is DEFRAG_MAX_CONCURRENT_DRAINING: at most this many
	// machines drain at once; negative: no limit (the default).
	MaxConcurrent int
	// MaxWhole is DEFRAG_MAX_WHOLE_MACHINES: no machine starts draining
	// once this many are whole or draining; negative: no limit (the
	// default).
	MaxWhole int
	// Requirements is DEFRAG_REQUIREMENTS: which machines may be drained
	// (besides not draining and not whole already). Default
	// "PartitionableSlot =?= true && Offline =!= true".
	Requirements string
	// Rank is DEFRAG_RANK: among those, the highest are drained first.
	// Default "-ExpectedMachineGracefulDrainingBadput", as HTCondor's; a
	// rank that is not a number counts as 0.
	Rank string
	// WholeMachine is DEFRAG_WHOLE_MACHINE_EXPR: a machine is whole, as a
	// whole-machine job wants it. Default "Cpus == TotalSlotCpus".
	WholeMachine string
	// CancelRequirements is DEFRAG_CANCEL_REQUIREMENTS: a drain the loop
	// started is cancelled once its machine satisfies it. Default
	// WholeMachine.
	CancelRequirements string
	// Schedule is DEFRAG_SCHEDULE: how the drains treat the running jobs:
	// "migrate" (the default), "graceful", "quick" or "fast", as
	// harrier drain's options.
	Schedule string
}

// Defaults of Config.
const (
	DefaultInterval     = 600 * time.Second
	DefaultRequirements = "PartitionableSlot =?= true && Offline =!= true"
	DefaultRank         = "-ExpectedMachineGracefulDrainingBadput"
	DefaultWholeMachine = "Cpus == TotalSlotCpus"
	DefaultSchedule     = "migrate"
)

// Policy is a Config, parsed.
type Policy struct {
	Interval                 time.Duration
	PerHour                  float64
	MaxConcurrent, MaxWhole  int
	requirements, rank       classad.Expr
	wholeMachine, cancelReqs classad.Expr
	Schedule                 string
}

// Parse checks cfg and fills in the defaults. The error names every
// setting that is wrong.
func Parse(cfg Config) (*Policy, error) {
	p := &Policy{Interval: cfg.Interval, PerHour: cfg.PerHour, MaxConcurrent: cfg.MaxConcurrent, MaxWhole: cfg.MaxWhole, Schedule: cfg.Schedule}
	var errs []error
	if p.Interval <= 0 {
		p.Interval = DefaultInterval
	}
	if p.PerHour < 0 {
		errs = append(errs, fmt.Errorf("DEFRAG_DRAINING_MACHINES_PER_HOUR: %v is negative", p.PerHour))
	}
	switch p.Schedule {
	case "":
		p.Schedule = DefaultSchedule
	case "migrate", "graceful", "quick", "fast":
	default:
		errs = append(errs, fmt.Errorf("DEFRAG_SCHEDULE: %q is none of migrate, graceful, quick, fast", p.Schedule))
	}
	if cfg.CancelRequirements == "" {
		cfg.CancelRequirements = cfg.WholeMachine
	}
	for _, e := range []struct {
		key, text, def string
		dst            *classad.Expr
	}{
		{"DEFRAG_REQUIREMENTS", cfg.Requirements, DefaultRequirements, &p.requirements},
		{"DEFRAG_RANK", cfg.Rank, DefaultRank, &p.rank},
		{"DEFRAG_WHOLE_MACHINE_EXPR", cfg.WholeMachine, DefaultWholeMachine, &p.wholeMachine},
		{"DEFRAG_CANCEL_REQUIREMENTS", cfg.CancelRequirements, DefaultWholeMachine, &p.cancelReqs},
	} {
		text := e.text
		if text == "" {
			text = e.def
		}
		x, err := classad.ParseExpr(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.key, err))
			continue
		}
		*e.dst = x
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Machine is one execute machine as the ads show it: the ads of its
// slots, but for dynamic slots (DynamicSlot), whose resources their
// partitionable slot's ad accounts for.
type Machine struct {
	Name string
	Ads  []*classad.ClassAd
}

// Machines groups slot ads by Machine, in the order the machines first
// appear.
func Machines(ads []*classad.ClassAd) []Machine {
	var out []Machine
	index := map[string]int{}
	for _, ad := range ads {
		if dyn, _ := ad.EvalBool("DynamicSlot"); dyn {
			continue
		}
		name, _ := ad.EvalString("Machine")
		if name == "" {
			continue
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Machine{Name: name})
		}
		out[i].Ads = append(out[i].Ads, ad)
	}
	return out
}

// holds reports whether e is exactly true on every one of m's slot ads:
// a machine of static slots is whole when each slot is.
func (m Machine) holds(e classad.Expr) bool {
	for _, ad := range m.Ads {
		if !ad.EvalExpr(e, nil).IsTrue() {
			return false
		}
	}
	return len(m.Ads) > 0
}

// draining reports whether the machine drains (Draining), and whether
// the loop drained it (DrainReason).
func (m Machine) draining() (draining, ours bool) {
	for _, ad := range m.Ads {
		if d, _ := ad.EvalBool("Draining"); d {
			r, _ := ad.EvalString("DrainReason")
			return true, r == Reason
		}
	}
	return false, false
}

// rank is the sum of the rank over m's slot ads: for a partitionable
// machine, its one ad's.
func (m Machine) rank(e classad.Expr) float64 {
	var sum float64
	for _, ad := range m.Ads {
		if f, ok := ad.EvalExpr(e, nil).RealValue(); ok {
			sum += f
		}
	}
	return sum
}

// Plan is what one look at the pool decides.
type Plan struct {
	// Drain are the machines to drain now, best ranked first.
	Drain []string
	// Cancel are the machines whose drains (the loop's) to cancel.
	Cancel []string
	// Whole and Draining count the machines whole, and draining, after
	// the plan is carried out.
	Whole, Draining int
}

// Plan decides, from the pool's machines, which drains to cancel and
// which machines to drain, at most allowance of them (the rate's share of
// this interval, rounded down by the caller). It is a pure function of its
// arguments.
//
// As condor_defrag: a drain the loop started is cancelled once its
// machine satisfies DEFRAG_CANCEL_REQUIREMENTS; then new drains start
// while fewer than DEFRAG_MAX_CONCURRENT_DRAINING machines drain and
// fewer than DEFRAG_MAX_WHOLE_MACHINES are whole or draining, taking the
// machines that satisfy DEFRAG_REQUIREMENTS, do not drain and are not
// whole, by DEFRAG_RANK, highest first (ties by name).
func (p *Policy) Plan(machines []Machine, allowance int) Plan {
	var plan Plan
	type candidate struct {
		name string
		rank float64
	}
	var candidates []candidate
	for _, m := range machines {
		whole := m.holds(p.wholeMachine)
		if whole {
			plan.Whole++
		}
		draining, ours := m.draining()
		switch {
		case draining && ours && m.holds(p.cancelReqs):
			plan.Cancel = append(plan.Cancel, m.Name)
		case draining:
			plan.Draining++
		case !whole && m.holds(p.requirements):
			candidates = append(candidates, candidate{m.Name, m.rank(p.rank)})
		}
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		if c := cmp.Compare(b.rank, a.rank); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	n := min(allowance, len(candidates))
	if p.MaxConcurrent >= 0 {
		n = min(n, p.MaxConcurrent-plan.Draining)
	}
	if p.MaxWhole >= 0 {
		n = min(n, p.MaxWhole-plan.Whole-plan.Draining)
	}
	for _, c := range candidates[:max(n, 0)] {
		plan.Drain = append(plan.Drain, c.name)
	}
	plan.Draining += len(plan.Drain)
	return plan
}

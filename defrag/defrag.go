package defrag

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"harrier.dev/harrier/classad"
)

// Pool is what the loop does to the pool.
type Pool interface {
	// Machines returns the ads of every slot the collector knows.
	Machines(ctx context.Context) ([]*classad.ClassAd, error)
	// Drain drains the machine with the schedule ("migrate", "graceful",
	// "quick", "fast") and reason.
	Drain(ctx context.Context, machine, schedule, reason string) error
	// CancelDrain puts the machine back in service.
	CancelDrain(ctx context.Context, machine string) error
}

// Defrag is the loop's state: the pool it acts on, and credit, the
// rate's fraction of a machine carried over to the next interval. Its
// owner calls Cycle every policy Interval, the first time one Interval
// after it starts, as condor_defrag.
type Defrag struct {
	pool   Pool
	log    *slog.Logger
	credit float64
}

// New returns a loop over pool.
func New(pool Pool, log *slog.Logger) *Defrag {
	return &Defrag{pool: pool, log: log}
}

// Cycle looks at the pool once and carries out p's plan: the
// interval's share of DEFRAG_DRAINING_MACHINES_PER_HOUR, plus what
// earlier intervals left over, may start draining. A drain or
// cancellation that fails is logged and the others go on; the error
// says only that the ads could not be read.
func (d *Defrag) Cycle(ctx context.Context, p *Policy) (Plan, error) {
	ads, err := d.pool.Machines(ctx)
	if err != nil {
		return Plan{}, fmt.Errorf("read the machine ads: %w", err)
	}
	d.credit += p.PerHour * p.Interval.Hours()
	allowance := int(math.Floor(d.credit))
	plan := p.Plan(Machines(ads), allowance)
	d.credit -= float64(len(plan.Drain))
	// A rate of less than a machine an interval accumulates; no more than
	// an interval's worth is saved up while nothing can be drained.
	d.credit = min(d.credit, max(1, p.PerHour*p.Interval.Hours()))
	for _, m := range plan.Cancel {
		if err := d.pool.CancelDrain(ctx, m); err != nil {
			d.log.Error("defrag: cancel drain", "machine", m, "err", err)
			continue
		}
		d.log.Info("defrag: machine whole, drain cancelled", "machine", m)
	}
	for _, m := range plan.Drain {
		if err := d.pool.Drain(ctx, m, p.Schedule, Reason); err != nil {
			d.log.Error("defrag: drain", "machine", m, "err", err)
			continue
		}
		d.log.Info("defrag: draining", "machine", m, "schedule", p.Schedule)
	}
	d.log.Info("defrag cycle", "whole", plan.Whole, "draining", plan.Draining, "started", len(plan.Drain), "cancelled", len(plan.Cancel))
	return plan, nil
}

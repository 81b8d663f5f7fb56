package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/config"
	"harrier.dev/harrier/defrag"
	"harrier.dev/harrier/wire"
)

// serveDefrag runs the defragmentation loop (HTCondor's condor_defrag,
// DEFRAG in DAEMON_LIST) until ctx is done: every DEFRAG_INTERVAL it
// reads the machine ads through this host's agent and drains machines
// through their masters, as harrier drain does (so it needs what the
// administrator's tools need: the agent's socket, and the admin
// certificate for masters on other hosts). A reconfiguration takes effect
// at the next interval.
func serveDefrag(ctx context.Context, pc *poolConfig, reconfigs <-chan reconfig, logger *slog.Logger) error {
	p, err := defragPolicy(pc)
	if err != nil {
		return err
	}
	var policy atomic.Pointer[defrag.Policy]
	policy.Store(p)
	wait := applyReconfigs(ctx, reconfigs, func(next *poolConfig) ([]string, error) {
		p, err := defragPolicy(next)
		if err != nil {
			return nil, err
		}
		policy.Store(p)
		return nil, nil
	})
	defer wait()
	logger.Info("defrag started", "interval", p.Interval, "per_hour", p.PerHour, "schedule", p.Schedule)
	d := defrag.New(&masterPool{pc: pc}, logger)
	t := time.NewTimer(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p := policy.Load()
		if _, err := d.Cycle(ctx, p); err != nil {
			logger.Error("defrag cycle", "err", err)
		}
		t.Reset(p.Interval)
	}
}

// defragPolicy reads the DEFRAG_* settings.
func defragPolicy(pc *poolConfig) (*defrag.Policy, error) {
	var cfg defrag.Config
	var errs []error
	var err error
	if cfg.Interval, err = pc.c.Duration("DEFRAG_INTERVAL", defrag.DefaultInterval); err != nil {
		errs = append(errs, err)
	}
	if v := strings.TrimSpace(pc.c.String("DEFRAG_DRAINING_MACHINES_PER_HOUR", "0")); v != "" {
		if cfg.PerHour, err = strconv.ParseFloat(v, 64); err != nil {
			errs = append(errs, fmt.Errorf("DEFRAG_DRAINING_MACHINES_PER_HOUR: %q is not a number", v))
		}
	}
	for key, dst := range map[string]*int{"DEFRAG_MAX_CONCURRENT_DRAINING": &cfg.MaxConcurrent, "DEFRAG_MAX_WHOLE_MACHINES": &cfg.MaxWhole} {
		n, err := pc.c.Int(key, -1)
		if err != nil {
			errs = append(errs, err)
		}
		*dst = int(n)
	}
	for key, dst := range map[string]*string{
		"DEFRAG_REQUIREMENTS": &cfg.Requirements, "DEFRAG_RANK": &cfg.Rank, "DEFRAG_WHOLE_MACHINE_EXPR": &cfg.WholeMachine,
		"DEFRAG_CANCEL_REQUIREMENTS": &cfg.CancelRequirements, "DEFRAG_SCHEDULE": &cfg.Schedule,
	} {
		v, err := pc.c.Expand(key)
		if err != nil && !errors.Is(err, config.ErrNotDefined) {
			errs = append(errs, err)
		}
		*dst = strings.TrimSpace(v)
	}
	cfg.Schedule = strings.ToLower(cfg.Schedule)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return defrag.Parse(cfg)
}

// masterPool is the pool as the defrag loop sees it: the ads through the
// agent, the drains through each machine's master.
type masterPool struct {
	pc *poolConfig
}

func (m *masterPool) Machines(ctx context.Context) ([]*classad.ClassAd, error) {
	client, closeFn, err := agentClient(m.pc)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: "Machine"})
	if err != nil {
		return nil, rpcError("query the machines", err)
	}
	ads := make([]*classad.ClassAd, 0, len(reply.Ads))
	for _, text := range reply.Ads {
		ad, err := classad.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("a machine ad: %w", err)
		}
		ads = append(ads, ad)
	}
	return ads, nil
}

func (m *masterPool) Drain(_ context.Context, machine, schedule, reason string) error {
	req := &wire.DrainRequest{Reason: reason, Graceful: schedule == "graceful", Quick: schedule == "quick", Fast: schedule == "fast"}
	return eachMaster(m.pc, machine, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		_, err := c.Drain(ctx, &wire.DaemonDrainRequest{Request: req})
		return err
	})
}

func (m *masterPool) CancelDrain(_ context.Context, machine string) error {
	return eachMaster(m.pc, machine, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		_, err := c.Drain(ctx, &wire.DaemonDrainRequest{Request: &wire.DrainRequest{Cancel: true}})
		return err
	})
}

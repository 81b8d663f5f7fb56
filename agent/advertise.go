package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// advertiseLoop sends the agent's idle jobs to the matchmaker whenever they
// change (kick) and at least every AdvertiseInterval, so that an event-driven
// negotiator hears of new jobs at once and a restarted one hears of all.
func (a *Agent) advertiseLoop(ctx context.Context) {
	ticker := time.NewTicker(a.cfg.AdvertiseInterval)
	defer ticker.Stop()
	clusterers := map[string]*clusterer{} // by matchmaker address
	a.materialize(ctx)
	took := a.timedAdvertise(ctx, clusterers)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-a.wake:
			// Let a burst of changes settle into one advertisement, and
			// keep advertising a large queue from eating the agent: wait
			// several times as long as the last round took.
			time.Sleep(max(10*time.Millisecond, 4*took))
		}
		a.materialize(ctx)
		took = a.timedAdvertise(ctx, clusterers)
	}
}

func (a *Agent) timedAdvertise(ctx context.Context, clusterers map[string]*clusterer) time.Duration {
	start := time.Now()
	a.advertise(ctx, clusterers)
	return time.Since(start)
}

// advertise sends the idle jobs, as resource requests, and the agent's
// Scheduler ad to the matchmaker and then to each FlockTo matchmaker, in
// order (direct flocking): a job runs in whichever pool matches it first,
// and a match that comes for a job no longer idle is refused. Each pool
// gets requests clustered by the significant attributes its negotiator
// publishes; clusterers keeps each pool's autoclustering from one round
// to the next.
func (a *Agent) advertise(ctx context.Context, clusterers map[string]*clusterer) {
	reschedule := a.reschedule.Swap(false)
	// The jobs being claimed are taken first, so that the scan of a large
	// queue does not hold up the runs, which need the lock to start and
	// end; a job claimed meanwhile may be advertised once more, and its
	// match refused. The queue's ads are only read: autoclusters copies
	// what it keeps.
	a.mu.Lock()
	busy := make(map[jobqueue.JobID]bool, len(a.runs))
	for id := range a.runs {
		busy[id] = true
	}
	a.mu.Unlock()
	var (
		idle  []idleJob
		local []jobqueue.JobID
	)
	counts := map[JobStatus]int64{}
	now := time.Now()
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) {
			return true
		}
		st := statusOf(ad)
		counts[st]++
		if st == Idle && !busy[id] && !waiting(ad, now) {
			if isLocal(ad) {
				local = append(local, id)
			} else {
				idle = append(idle, idleJob{id: id, ad: ad})
			}
		}
		return true
	})
	// Local jobs need no match: the agent starts them itself.
	for _, id := range local {
		a.startLocal(id)
	}
	a.metrics.queue(counts)
	sched := classad.New()
	sched.SetString("MyType", "Scheduler")
	sched.SetString("Name", a.cfg.Name)
	sched.SetString("AgentAddr", a.cfg.AdvertiseAddr)
	sched.SetInt("TotalIdleJobs", counts[Idle])
	sched.SetInt("TotalRunningJobs", counts[Running])
	sched.SetInt("TotalHeldJobs", counts[Held])
	sched.SetInt("MyCurrentTime", time.Now().Unix())
	sched.SetInt("DaemonStartTime", a.started.Unix())
	addrs := append([]string{a.cfg.MatchmakerAddr}, a.cfg.FlockTo...)
	for addr := range clusterers {
		if !slices.Contains(addrs, addr) {
			delete(clusterers, addr) // a pool no longer flocked to
		}
	}
	for _, addr := range addrs {
		c := clusterers[addr]
		if c == nil {
			c = &clusterer{}
			clusterers[addr] = c
		}
		if err := a.advertiseTo(ctx, addr, c, idle, sched, reschedule); err != nil {
			a.log.Warn("advertise", "matchmaker", addr, "err", err)
		}
	}
}

// advertiseTo advertises to the matchmaker at addr, asking for a cycle if
// reschedule is set.
func (a *Agent) advertiseTo(ctx context.Context, addr string, c *clusterer, idle []idleJob, sched *classad.ClassAd, reschedule bool) error {
	client, err := a.client.collector(addr)
	if err != nil {
		return err
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	var significant []string
	if reply, err := client.Query(cctx, &wire.QueryRequest{Type: "Negotiator"}); err == nil && len(reply.Ads) > 0 {
		if ad, err := classad.Parse(reply.Ads[0]); err == nil {
			significant, _ = parseSignificant(ad)
		}
	}
	reqs := c.requests(idle, significant)
	ads := make([]string, len(reqs))
	for i, r := range reqs {
		ads[i] = r.String()
	}
	lease := int32(3 * a.cfg.AdvertiseInterval / time.Second)
	if _, err := client.AdvertiseJobs(cctx, &wire.AdvertiseJobsRequest{
		Agent: a.cfg.Name, AgentAddr: a.cfg.AdvertiseAddr, Ads: ads, LeaseSeconds: lease, Reschedule: reschedule}); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if _, err := client.Advertise(cctx, &wire.AdvertiseRequest{
		Type: "Scheduler", Name: a.cfg.Name, Ad: sched.String(), LeaseSeconds: lease}); err != nil {
		return fmt.Errorf("agent ad: %w", err)
	}
	return nil
}

// waiting reports whether a job whose last start failed is still sitting
// out its back-off at now.
func waiting(ad *classad.ClassAd, now time.Time) bool {
	d := startBackoff(ad)
	if d == 0 {
		return false
	}
	last, _ := ad.EvalInt(AttrLastShadowExceptionDate)
	return now.Before(time.Unix(last, 0).Add(d))
}

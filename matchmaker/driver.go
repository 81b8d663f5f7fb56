package matchmaker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// driver runs negotiation cycles: on a kick (debounced) and periodically.
// It is the one place where the negotiator's decisions become effects: it
// applies them to the collector and sends the notifications.
type driver struct {
	log        *slog.Logger
	collector  *Collector
	negotiator Negotiator
	accountant *Accountant // nil: no fair share
	licenses   *licensePool
	notifier   Notifier
	clock      Clock
	name       string        // of the Negotiator ad
	started    time.Time     // DaemonStartTime in the Negotiator ad
	interval   time.Duration // between periodic cycles
	debounce   time.Duration // from the first kick to its cycle

	kick chan struct{} // capacity 1: a pending kick absorbs later ones
	sem  chan struct{} // bounds notifications in flight
	wg   sync.WaitGroup

	saved time.Time // when the accountant and cycles were last saved
	// cycles are the recent cycles' statistics, latest first, kept in
	// statsFile ("" for nowhere) across restarts.
	cycles    []CycleStats
	statsFile string
	// reservations narrows negotiation to what advance reservations
	// allow and vacates what their windows keep off slots.
	reservations *reservations
	metrics      *cycleMetrics

	// mu guards interval, negotiator.PreemptionRequirements and
	// negotiator.Limits, which reconfigure changes; retime (capacity 1) tells run the interval
	// changed.
	mu     sync.Mutex
	retime chan struct{}
}

// reconfigure sets the interval between periodic cycles, the
// preemption requirements and the concurrency limits; the next cycle
// uses them.
func (d *driver) reconfigure(interval time.Duration, preempt classad.Expr, limits *Limits) {
	d.mu.Lock()
	d.interval, d.negotiator.PreemptionRequirements, d.negotiator.Limits = interval, preempt, limits
	d.mu.Unlock()
	select {
	case d.retime <- struct{}{}:
	default:
	}
}

// settings returns the interval and the negotiator as reconfigure last
// set them.
func (d *driver) settings() (time.Duration, Negotiator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.interval, d.negotiator
}

// stateSaveInterval bounds how often a cycle saves the accountant and the
// cycles' statistics: a save syncs files, and cycles follow every job's
// end on a busy pool. A matchmaker that crashes forgets at most this much;
// changes the administrator makes are saved at once, and a stopping
// matchmaker saves.
const stateSaveInterval = 10 * time.Second

// Kick asks for a cycle soon. It never blocks.
func (d *driver) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// run drives cycles until ctx is done, then waits for the notifications in
// flight.
func (d *driver) run(ctx context.Context) {
	defer d.wg.Wait()
	interval, _ := d.settings()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var debounce <-chan time.Time
	defer d.saveState()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
			if debounce == nil {
				debounce = time.After(d.debounce)
			}
		case <-debounce:
			debounce = nil
			d.cycle(ctx)
		case <-tick.C:
			debounce = nil
			d.cycle(ctx)
		case <-d.retime:
			interval, _ := d.settings()
			tick.Reset(interval)
		}
	}
}

// saveState writes the accountant's state and the recent cycles'
// statistics to their files, where they have them.
func (d *driver) saveState() {
	d.saved = time.Now()
	if d.accountant != nil {
		if err := d.accountant.Save(); err != nil {
			d.log.Error("save user priorities", "err", err)
		}
	}
	if d.statsFile != "" {
		if err := saveCycleStats(d.statsFile, d.cycles); err != nil {
			d.log.Error("save negotiator statistics", "err", err)
		}
	}
}

// cycle runs one negotiation: snapshot, charge usage to the accountant,
// decide, record the matches in the collector, and hand the notifications
// to background senders so that a slow peer delays only its own match.
func (d *driver) cycle(ctx context.Context) CycleStats {
	interval, negotiator := d.settings()
	start := time.Now()
	reqs, machines := d.collector.Snapshot()
	d.reservations.enforce(ctx, d.clock.Now(), machines, &d.wg)
	reqs, machines = d.reservations.apply(d.clock.Now(), reqs, machines)
	snap := time.Since(start)
	if d.accountant != nil {
		d.accountant.Update(d.clock.Now(), usageOf(machines))
		for _, u := range d.accountant.Users() {
			d.collector.Advertise(TypeAccounting, u.Name, u.Ad(), 3*interval)
		}
	}
	seats, used := d.licenses.offers(machines, d.clock.Now())
	gangs := negotiator.MarshalGangs(reqs, machines, seats)
	for _, g := range gangs.Matches {
		d.startGang(ctx, g)
		for _, l := range g.Licenses {
			used[l]++
		}
	}
	for _, ad := range d.licenses.ads(used) {
		d.collector.Advertise(TypeLicense, licenseName(ad), ad, 3*interval)
	}
	res := negotiator.Negotiate(gangs.Requests, gangs.Machines)
	res.SignificantAttributes = d.reservations.significant(res.SignificantAttributes)
	for _, m := range res.Matches {
		d.collector.Claim(m)
		d.wg.Add(1)
		go d.notify(context.WithoutCancel(ctx), m)
	}
	submitters := map[string]bool{}
	for i := range reqs {
		submitters[submitter(&reqs[i])] = true
	}
	s := CycleStats{
		Start:                 d.clock.Now(),
		Duration:              time.Since(start),
		Snapshot:              snap,
		Phases:                res.Phases,
		Matches:               len(res.Matches) + len(gangs.Matches),
		Rejections:            res.Rejections + gangs.GangJobs - len(gangs.Matches),
		IdleJobs:              res.IdleJobs + gangs.GangJobs,
		Requests:              res.Requests + gangs.GangRequests,
		CandidateSlots:        res.CandidateSlots,
		MachineClasses:        res.MachineClasses,
		Preemptions:           res.Preemptions,
		Submitters:            len(submitters),
		SignificantAttributes: res.SignificantAttributes,
	}
	d.metrics.record(&s)
	d.cycles = append([]CycleStats{s}, d.cycles[:min(len(d.cycles), cycleStatsKept-1)]...)
	if time.Since(d.saved) >= stateSaveInterval {
		d.saveState()
	}
	ad := negotiatorAd(d.name, d.cycles)
	ad.SetInt("DaemonStartTime", d.started.Unix())
	for name, use := range res.LimitsInUse {
		ad.SetReal(LimitAttr(name), use)
	}
	for g, quota := range res.GroupQuotas {
		ad.SetReal(GroupQuotaAttr(g), quota)
		ad.SetReal(GroupUsageAttr(g), res.GroupsInUse[g])
	}
	negotiator.Limits.publish(ad)
	d.collector.Advertise(TypeNegotiator, d.name, ad, 3*interval)
	level := slog.LevelDebug
	if s.Matches > 0 {
		level = slog.LevelInfo
	}
	d.log.Log(ctx, level, "negotiation cycle", "stats", s)
	return s
}

// notify tells the startd of m and, only if it accepted, the agent. When
// the startd cannot be told, the job goes back to its agent's idle set and
// another cycle is asked for; the machine stays Matched until its startd
// advertises again.
func (d *driver) notify(ctx context.Context, m Match) {
	defer d.wg.Done()
	d.sem <- struct{}{}
	defer func() { <-d.sem }()

	claim := newClaimID()
	job := m.Job.Ad.Copy()
	job.SetString("JobId", m.Job.ID)
	if p := m.Preempts; p != nil {
		// The startd reads these to vacate the running job for this one.
		job.SetString(AttrPreemptReason, p.Reason)
		job.SetString(AttrPreemptsJob, p.JobID)
	}
	jobAd := job.String()
	addr, _ := m.Machine.Ad.EvalString("StartdAddr")
	log := d.log.With("job", m.Job.ID, "agent", m.Job.Agent, "slot", m.Machine.Name)
	if p := m.Preempts; p != nil {
		log.Info("preempting", "reason", p.Reason, "remote_owner", p.RemoteOwner, "remote_job", p.JobID)
	}

	sctx, cancel := wire.WithTimeout(ctx)
	err := d.notifier.StartdMatched(sctx, addr, &wire.StartdMatchedRequest{Slot: m.Machine.Name, ClaimId: claim, JobAd: jobAd})
	cancel()
	if err != nil {
		log.Warn("startd not told of match; job returns to the idle set", "startd", addr, "err", err)
		d.collector.Unclaim(m)
		d.Kick()
		return
	}
	actx, cancel := wire.WithTimeout(ctx)
	err = d.notifier.AgentMatched(actx, m.Job.AgentAddr, &wire.MatchedRequest{
		JobId:      m.Job.ID,
		ClaimId:    claim,
		MachineAd:  m.Machine.Ad.String(),
		StartdAddr: addr,
		Slot:       m.Machine.Name,
	})
	cancel()
	if err != nil {
		// The startd drops the unclaimed match after its own timeout, and
		// the agent's next advertisement offers the job again.
		log.Warn("agent not told of match", "addr", m.Job.AgentAddr, "err", err)
		return
	}
	log.Debug("match sent", "startd", addr)
}

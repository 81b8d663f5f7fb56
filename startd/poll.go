package startd

import (
	"context"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/starter"
)

// policyLoop evaluates the owner policy of every slot now and every
// PollingInterval until ctx is done.
func (s *Startd) policyLoop(ctx context.Context) {
	// A timer, not a ticker: Reconfigure may change the interval.
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.evaluate()
		t.Reset(s.pollingInterval())
	}
}

// evaluate measures the machine, samples the load of the running jobs, and
// takes the step the policy decides for each slot.
func (s *Startd) evaluate() {
	s.mu.Lock()
	starters := map[int]int{}
	for _, sl := range s.slots {
		if r := runOf(sl.phase); r != nil {
			starters[sl.id] = r.proc.cmd.Process.Pid
		}
	}
	s.mu.Unlock()
	s.loads.sample(starters, time.Now())

	m, err := s.snapshot()
	if err != nil {
		s.log.Error("measure machine", "err", err)
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	machines := make(map[int]*classad.ClassAd, len(s.slots))
	for _, sl := range s.slots {
		v := sl.view(s.slots)
		machines[sl.id] = machineAd(s.adc, m, v, now)
		st, why := s.adc.policy.decide(situation{
			status:       v.status,
			machine:      machines[sl.id],
			job:          v.job,
			inActivity:   now.Sub(sl.enteredActivity),
			leaseExpired: v.claim != nil && now.Sub(sl.renewed) > claimLease(s.cfg.ClaimLease, v.job),
		})
		if st != stay {
			s.apply(sl, st, why)
		}
	}
	s.retire(machines, now)
	s.resumeIfEmpty()
	s.checkPeaceful()
}

// apply carries out a step decide chose for sl's current phase. It must be
// called with s.mu held.
func (s *Startd) apply(sl *slot, st step, why string) {
	s.log.Info("owner policy", "slot", sl.name, "status", sl.phase.status().String(), "action", st.String(), "reason", why)
	c, r := claimOf(sl.phase), runOf(sl.phase)
	switch st {
	case becomeOwner:
		s.move(sl, owner{})
	case becomeUnclaimed, releaseClaim:
		s.move(sl, unclaimed{})
	case suspendJob:
		r.command(starter.Command{Suspend: true})
		s.move(sl, claimedSuspended{claim: c, run: r})
	case continueJob:
		r.command(starter.Command{Continue: true})
		s.move(sl, claimedBusy{claim: c, run: r})
	case vacateJob, killJob:
		s.evict(sl, st, pendingOf(sl.phase))
	}
}

// evict carries out vacateJob or killJob on sl, whose phase holds a
// starter, keeping pending (the claim id of a preempting match, or "") as
// the claim the slot goes to once the starter is gone. It must be called
// with s.mu held.
func (s *Startd) evict(sl *slot, st step, pending string) {
	c, r := claimOf(sl.phase), runOf(sl.phase)
	if st == vacateJob {
		// The starter stops the job gently (checkpointing it where it
		// can) and reports it evicted, so that it runs again elsewhere.
		r.command(starter.Command{Vacate: true})
		s.move(sl, preemptingVacating{claim: c, run: r, pending: pending})
		return
	}
	r.command(starter.Command{Kill: true})
	s.move(sl, preemptingKilling{claim: c, run: r, pending: pending})
	s.runs.Go(func() { r.killAfter(s.killGrace) })
}

// vacated moves sl, whose starter is gone, on from Preempting: to Matched
// for the preempting match it was vacated for, if any, or else to
// Unclaimed (the next policy evaluation decides whether the owner has it).
// A pending claim that its agent does not request in time expires like
// any other match. It must be called with s.mu held.
func (s *Startd) vacated(sl *slot) {
	pending := pendingOf(sl.phase)
	if pending == "" {
		s.move(sl, unclaimed{})
		return
	}
	s.match(sl, pending)
}

// snapshot measures the machine and adds the load of Harrier's jobs.
func (s *Startd) snapshot() (machine, error) {
	m, err := s.measure()
	if err != nil {
		return m, err
	}
	m.condorLoads = map[int]float64{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		if l := s.loads.load(sl.id); l > 0 {
			m.condorLoads[sl.id] = l
		}
	}
	return m, nil
}

// claimLease is how long a claim lives without word from its agent: the
// configured lease, or the running job's own lease (job_lease_duration)
// if longer, for the job runs on that long when its submit machine is out
// of reach, as HTCondor's jobs do.
func claimLease(configured time.Duration, job *classad.ClassAd) time.Duration {
	if job == nil {
		return configured
	}
	secs, _ := job.EvalInt("JobLeaseDuration")
	return max(configured, time.Duration(secs)*time.Second)
}

package startd

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/wire"
)

// endpoint implements the Startd service of the wire protocol.
type endpoint struct {
	wire.UnimplementedStartdServer
	s *Startd
}

// The job ad attributes by which the negotiator marks a preempting match
// (matchmaker.AttrPreemptReason and AttrPreemptsJob): why it preempts,
// "rank" or "priority", and the JobId of the claim it preempts.
const (
	attrPreemptReason = "PreemptReason"
	attrPreemptsJob   = "PreemptsJob"
	// attrGangLicenses (matchmaker.AttrGangLicenses) lists the licenses
	// the job claiming a gang's first machine holds.
	attrGangLicenses = "GangLicenses"
	// attrConcurrencyLimits (matchmaker.AttrConcurrencyLimits) names
	// the concurrency limits a job uses, in its ad and, while its claim
	// lasts, in its slot's.
	attrConcurrencyLimits = "ConcurrencyLimits"
	// attrAccountingGroup (matchmaker.AttrAccountingGroup) names the
	// accounting group a job runs in, in its ad and in its slot's.
	attrAccountingGroup = "AccountingGroup"
	// attrGangHeld (matchmaker.AttrGangHeld) marks a claim held for a
	// gang's job that runs on another machine.
	attrGangHeld = "GangHeld"
)

// Matched puts an Unclaimed slot into Matched, where it waits for a claim
// with the same id; if none comes within the match timeout it goes back to
// Unclaimed.
//
// A preempting match (marked with PreemptReason: the machine's RANK
// prefers the job to the one it has, or the job's user has the better
// priority) also takes a Claimed slot, as HTCondor's startd does. Its
// claim id becomes the slot's pending claim: an idle claim is dropped and
// the slot is Matched at once; a running job is vacated (checkpointed
// where it can be; killed at once if WANT_VACATE is false, and after
// MaxVacateTime if it lingers), and the slot becomes Matched under the
// pending claim only once the job is gone, so that it goes to the
// preempting job and to no other. Meanwhile the preempting agent's claim
// requests are answered pending.
func (e *endpoint) Matched(_ context.Context, req *wire.StartdMatchedRequest) (*wire.StartdMatchedReply, error) {
	s := e.s
	if req.ClaimId == "" {
		return nil, status.Error(codes.InvalidArgument, "matched: empty claim id")
	}
	job, err := parseJobAd(req.JobAd)
	if err != nil {
		return nil, err
	}
	reason := evalString(job, attrPreemptReason)
	// WANT_VACATE may read the machine, and a partitionable slot's
	// leftover depends on it.
	m, err := s.snapshot()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "matched: measure machine: %v", err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotByName(req.Slot)
	if sl == nil {
		return nil, status.Errorf(codes.NotFound, "matched: no slot %q", req.Slot)
	}
	switch sl.phase.(type) {
	case unclaimed:
		if sl.kind == partitionable {
			d, err := s.carve(sl, job, m)
			if err != nil {
				return nil, status.Errorf(codes.FailedPrecondition, "matched: %v", err)
			}
			sl = d
		}
		s.match(sl, req.ClaimId)
		return &wire.StartdMatchedReply{}, nil
	case claimedIdle, claimedBusy, claimedSuspended:
		if reason == "" {
			break
		}
		v := sl.view(s.slots)
		ad := machineAd(s.adc, m, v, now)
		if err := checkPreemption(ad, job, v.claim, reason); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "matched: %s: %v", sl.name, err)
		}
		s.preempt(sl, req.ClaimId, ad, job, reason)
		return &wire.StartdMatchedReply{}, nil
	}
	return nil, status.Errorf(codes.FailedPrecondition, "matched: %s is %s, not %s", sl.name, sl.phase.status(), unclaimed{}.status())
}

// match puts sl into Matched under claimID and returns it to Unclaimed if
// no claim comes within the match timeout. It must be called with s.mu
// held.
func (s *Startd) match(sl *slot, claimID string) {
	s.move(sl, matched{claimID: claimID})
	time.AfterFunc(s.matchTimeout, func() { s.expireMatch(sl, claimID) })
}

// expireMatch returns sl to Unclaimed if it still waits for claimID.
func (s *Startd) expireMatch(sl *slot, claimID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := sl.phase.(matched); ok && m.claimID == claimID {
		s.log.Info("match not claimed in time", "slot", sl.name)
		s.move(sl, unclaimed{})
	}
}

// checkPreemption checks a preempting match for job against the claim c
// the slot has now, whose machine ad is ad: the negotiator decided on an
// ad that may be out of date. The match must preempt the claim's job
// (PreemptsJob, the JobId the negotiator read), not one that has taken
// the slot since; and a job preempts by rank only if the machine's RANK
// of it is above CurrentRank, by priority only if it is not below.
func checkPreemption(ad, job *classad.ClassAd, c *claim, reason string) error {
	if victim := evalString(job, attrPreemptsJob); victim != c.jobID {
		return fmt.Errorf("the match preempts job %q, but the slot's claim is for job %q", victim, c.jobID)
	}
	current, _ := ad.EvalReal("CurrentRank")
	rank := classad.Rank(ad, job)
	switch {
	case reason == "rank" && rank <= current:
		return fmt.Errorf("RANK of the preempting job is %g, not above CurrentRank %g", rank, current)
	case rank < current:
		return fmt.Errorf("RANK of the preempting job is %g, below CurrentRank %g", rank, current)
	}
	return nil
}

// preempt gives the Claimed slot sl to the preempting match claimID for
// job, as Matched describes; ad is the slot's machine ad now. It must be
// called with s.mu held.
func (s *Startd) preempt(sl *slot, claimID string, ad, job *classad.ClassAd, reason string) {
	v := sl.view(s.slots)
	s.log.Info("preempting claim", "slot", sl.name, "reason", reason, "job", jobID(job), "owner", evalString(job, "Owner"),
		"preempted_job", jobID(v.job), "preempted_owner", v.claim.owner)
	if _, idle := sl.phase.(claimedIdle); idle {
		s.match(sl, claimID)
		return
	}
	s.evict(sl, s.adc.policy.evictStep(ad, v.job), claimID)
}

// RequestClaim claims a Matched slot for an agent if the claim id is the
// one the negotiator gave and the match still holds on a fresh measurement
// of the machine. A refusal is a reply, not an error, so that the agent can
// record why.
func (e *endpoint) RequestClaim(ctx context.Context, req *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	s := e.s
	caller, ok := wire.PeerOf(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "request claim: unknown caller")
	}
	job, err := parseJobAd(req.JobAd)
	if err != nil {
		return nil, err
	}
	m, err := s.snapshot()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "request claim: measure machine: %v", err)
	}
	now := time.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.claimSlot(req.Slot, req.ClaimId)
	if sl == nil {
		return nil, status.Errorf(codes.NotFound, "request claim: no slot %q", req.Slot)
	}
	if pendingOf(sl.phase) == req.ClaimId {
		return &wire.RequestClaimReply{Pending: true, Reason: fmt.Sprintf("%s is vacating its job for this claim", sl.name)}, nil
	}
	mp, ok := sl.phase.(matched)
	if !ok {
		return refuse("%s is %s, not %s", sl.name, sl.phase.status(), matched{}.status()), nil
	}
	// A wrong id does not undo the match: it is not the matched agent
	// asking, and the matched one may still come.
	if mp.claimID != req.ClaimId {
		return refuse("%s is matched under another claim id", sl.name), nil
	}
	ad := machineAd(s.adc, m, sl.view(s.slots), now)
	if !classad.Match(job, ad) {
		s.move(sl, unclaimed{})
		why := "the job's requirements are false for the machine"
		if !ad.EvalAttrAgainst("Requirements", job).IsTrue() {
			why = "the machine's START expression is false for the job"
		}
		s.log.Info("claim refused", "slot", sl.name, "reason", why)
		return refuse("%s: the match no longer holds: %s", sl.name, why), nil
	}
	c := &claim{id: req.ClaimId, agent: req.Agent, holder: caller.Identity, owner: evalString(job, "Owner"), jobID: jobID(job), job: job}
	sl.renewed = now
	s.move(sl, claimedIdle{claim: c})
	// A machine held for a gang whose job runs on another stays idle
	// while the job runs; its agent's keepalives hold it.
	if held, _ := job.EvalBool(attrGangHeld); !held {
		s.expireIdleClaimAfter(sl, c.id)
	}
	return &wire.RequestClaimReply{Accepted: true, MachineAd: machineAd(s.adc, m, sl.view(s.slots), now).String()}, nil
}

func refuse(format string, args ...any) *wire.RequestClaimReply {
	return &wire.RequestClaimReply{Reason: fmt.Sprintf(format, args...)}
}

// ActivateClaim starts a starter for the job on a Claimed/Idle slot, which
// becomes Claimed/Busy until the starter exits.
//
// The job may not be the one the claim was made for (an agent reuses its
// claims), so START is evaluated again, for this job, on a fresh
// measurement: a job START is not true for is refused.
func (e *endpoint) ActivateClaim(ctx context.Context, req *wire.ActivateClaimRequest) (*wire.ActivateClaimReply, error) {
	s := e.s
	job, err := parseJobAd(req.JobAd)
	if err != nil {
		return nil, err
	}
	if req.ShadowAddr == "" || req.ShadowFingerprint == "" || req.Secret == "" {
		return nil, status.Error(codes.InvalidArgument, "activate claim: no shadow address, fingerprint or secret")
	}
	m, err := s.snapshot()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "activate claim: measure machine: %v", err)
	}
	now := time.Now()
	sl, c, spec, kept, err := s.reserveActivation(ctx, req, job, m, now)
	if err != nil {
		return nil, err
	}
	// The scratch directory, the log and the exec happen outside the
	// lock, so that other slots' RPCs, the policy and the ads never wait
	// for them; the slot is reserved meanwhile (claimedIdle.activating).
	r, err := startStarter(s.cfg.StarterCommand, kept, s.cfg.ExecuteDir, sl.short(), spec)

	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := sl.phase.(claimedIdle); !ok || cur.claim != c || !cur.activating {
		// Released or preempted while the starter started: the job must
		// not run on a slot that is no longer the claim's.
		if err == nil {
			r.abandon(s.killGrace)
		}
		return nil, status.Errorf(codes.Aborted, "activate claim: %s left the claim while its job started", sl.name)
	}
	if err != nil {
		sl.phase = claimedIdle{claim: c}
		s.log.Error("start starter", "slot", sl.name, "err", err)
		return nil, status.Errorf(codes.Internal, "activate claim: %v", err)
	}
	r.job = job
	s.move(sl, claimedBusy{claim: c, run: r})
	s.metrics.activations.Inc()
	s.log.Info("starter started", "slot", sl.name, "pid", r.proc.cmd.Process.Pid, "scratch", r.scratch)
	s.runs.Go(func() { s.reap(sl, r) })
	return &wire.ActivateClaimReply{}, nil
}

// reserveActivation checks that the caller may start job under its claim
// and reserves the Claimed/Idle slot for it: the slot stays Claimed/Idle
// but refuses a second activation, and the starter kept from the claim's
// previous job, returned, now belongs to the activation.
func (s *Startd) reserveActivation(ctx context.Context, req *wire.ActivateClaimRequest, job *classad.ClassAd, m machine, now time.Time) (*slot, *claim, starter.Spec, *starterProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, c := s.slotByClaim(req.ClaimId)
	if sl == nil {
		return nil, nil, starter.Spec{}, nil, status.Error(codes.NotFound, "activate claim: unknown claim id")
	}
	if err := holds(ctx, c, "activate claim"); err != nil {
		return nil, nil, starter.Spec{}, nil, err
	}
	idle, ok := sl.phase.(claimedIdle)
	if !ok {
		return nil, nil, starter.Spec{}, nil, status.Errorf(codes.FailedPrecondition, "activate claim: %s is %s, not %s", sl.name, sl.phase.status(), claimedIdle{}.status())
	}
	if idle.activating {
		return nil, nil, starter.Spec{}, nil, status.Errorf(codes.FailedPrecondition, "activate claim: %s is already starting a job", sl.name)
	}
	view := sl.view(s.slots)
	slotAd := machineAd(s.adc, m, view, now)
	if !slotAd.EvalExpr(s.adc.policy.start, job).IsTrue() {
		return nil, nil, starter.Spec{}, nil, status.Errorf(codes.FailedPrecondition, "activate claim: the machine's START expression is not true for job %s", jobID(job))
	}
	sl.renewed = now
	have, _ := view.resources(m, s.adc.numSlots)
	scratchLimit := s.cfg.ScratchLimitKB
	if scratchLimit == 0 {
		scratchLimit = have.diskKiB
	}
	spec := starter.Spec{
		Slot:              sl.name,
		Host:              s.cfg.Name,
		ClaimID:           c.id,
		JobAd:             req.JobAd,
		MachineAd:         slotAd.String(),
		ShadowAddr:        req.ShadowAddr,
		ShadowFingerprint: req.ShadowFingerprint,
		Secret:            req.Secret,
		CertFile:          s.cfg.CertFile,
		KeyFile:           s.cfg.KeyFile,
		CAFile:            s.cfg.CAFile,
		Sandbox:           s.cfg.Sandbox,
		ScratchLimitKB:    max(scratchLimit, 0),
		Cpus:              have.cpus,
		ThreadEnvVars:     s.cfg.ThreadEnvVars,
		MachineCpus:       int64(m.cpus),
		Cpuset:            s.pin(sl, have.cpus),
		CheckpointKeyFile: s.cfg.CheckpointKeyFile,
		TransferPlugins:   s.plugins,
	}
	spec.GPUs, spec.GPUDevices = s.adc.gpus.spec(sl.gpus)
	// Not a move: the slot's state and activity do not change.
	sl.phase = claimedIdle{claim: c, activating: true}
	return sl, c, spec, idle.starter, nil
}

// reap waits for a job's end. A slot whose job ended by itself returns to
// Claimed/Idle for the agent to reuse, keeping the starter; a preempted
// one moves on from Preempting (see vacated), and its starter, if it
// finished the job just before it was told to stop, goes.
func (s *Startd) reap(sl *slot, r *run) {
	r.wait()
	s.log.Info("job ended", "slot", sl.name, "status", exitStatus(r.err))
	s.mu.Lock()
	defer s.mu.Unlock()
	if runOf(sl.phase) == r {
		switch p := sl.phase.(type) {
		case claimedBusy, claimedSuspended:
			c := claimOf(p)
			s.move(sl, claimedIdle{claim: c, starter: r.kept()})
			s.expireIdleClaimAfter(sl, c.id)
			return
		case preemptingVacating, preemptingKilling:
			s.vacated(sl)
		}
	}
	go r.proc.stop()
}

// expireIdleClaimAfter releases sl's claim if it is still idle, with no job
// started under it, after the claim idle timeout: an agent that died or
// forgot its claim must not keep the machine from others.
func (s *Startd) expireIdleClaimAfter(sl *slot, claimID string) {
	time.AfterFunc(s.claimIdleTimeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if p, ok := sl.phase.(claimedIdle); ok && p.claim.id == claimID && !p.activating && time.Since(sl.enteredActivity) >= s.claimIdleTimeout {
			s.log.Info("idle claim released", "slot", sl.name, "idle", s.claimIdleTimeout)
			s.move(sl, unclaimed{})
		}
	})
}

// ReleaseClaim ends a claim: a running starter is killed (SIGTERM, SIGKILL
// after a grace period) and its scratch directory removed before the slot
// becomes Unclaimed. It returns when that is done, or when ctx ends if the
// job is already being vacated by the owner policy. A match not yet claimed
// may be released too, by the agent that turns it down (its job ran in
// another pool meanwhile): the slot is Unclaimed at once rather than after
// the match timeout.
func (e *endpoint) ReleaseClaim(ctx context.Context, req *wire.ReleaseClaimRequest) (*wire.ReleaseClaimReply, error) {
	s := e.s
	s.mu.Lock()
	for _, sl := range s.slots {
		if m, ok := sl.phase.(matched); ok && m.claimID == req.ClaimId {
			s.move(sl, unclaimed{})
			s.mu.Unlock()
			return &wire.ReleaseClaimReply{}, nil
		}
	}
	sl, c := s.slotByClaim(req.ClaimId)
	if sl == nil {
		s.mu.Unlock()
		return nil, status.Error(codes.NotFound, "release claim: unknown claim id")
	}
	if err := holds(ctx, c, "release claim"); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	r := runOf(sl.phase)
	switch sl.phase.(type) {
	case claimedIdle:
		s.move(sl, unclaimed{})
		s.mu.Unlock()
		return &wire.ReleaseClaimReply{}, nil
	case claimedBusy, claimedSuspended:
		s.move(sl, preemptingKilling{claim: c, run: r})
	case preemptingVacating, preemptingKilling:
		// Already on its way out, by the owner policy or for a
		// preempting match: wait for it.
		s.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &wire.ReleaseClaimReply{}, nil
	}
	s.mu.Unlock()

	r.kill(s.killGrace)

	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := sl.phase.(preemptingKilling); ok && p.run == r {
		s.vacated(sl)
	}
	return &wire.ReleaseClaimReply{}, nil
}

// KeepAlive renews a claim's lease. A claim whose agent sends none for
// the lease time (ClaimLease) is released, its job vacated.
func (e *endpoint) KeepAlive(ctx context.Context, req *wire.KeepAliveRequest) (*wire.KeepAliveReply, error) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, c := s.slotByClaim(req.ClaimId)
	if sl == nil {
		return nil, status.Error(codes.NotFound, "keepalive: unknown claim id")
	}
	if err := holds(ctx, c, "keepalive"); err != nil {
		return nil, err
	}
	sl.renewed = time.Now()
	return &wire.KeepAliveReply{LeaseSeconds: int32(s.cfg.ClaimLease / time.Second)}, nil
}

// holds checks that the caller is the agent that made claim c: a claim id
// is a secret, but a claim is also bound to its agent's certificate, so
// that knowing the id is not enough to use another agent's claim.
func holds(ctx context.Context, c *claim, what string) error {
	p, ok := wire.PeerOf(ctx)
	if !ok || p.Identity != c.holder {
		return status.Errorf(codes.PermissionDenied, "%s: the claim belongs to %s, not to %s", what, c.holder, p.Identity)
	}
	return nil
}

// parseJobAd parses a job ad sent by a peer; a malformed one is the
// caller's error.
func parseJobAd(text string) (*classad.ClassAd, error) {
	ad, err := classad.Parse(text)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "job ad: %v", err)
	}
	return ad, nil
}

// jobID returns the job's "cluster.proc" id from JobId or ClusterId and
// ProcId, or "".
func jobID(job *classad.ClassAd) string {
	if id := evalString(job, "JobId"); id != "" {
		return id
	}
	c, ok1 := job.EvalInt("ClusterId")
	p, ok2 := job.EvalInt("ProcId")
	if ok1 && ok2 {
		return fmt.Sprintf("%d.%d", c, p)
	}
	return ""
}

func evalString(ad *classad.ClassAd, name string) string {
	v, _ := ad.EvalString(name)
	return v
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

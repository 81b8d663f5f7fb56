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

// Matched puts an Unclaimed slot into Matched, where it waits for a claim
// with the same id; if none comes within the match timeout it goes back to
// Unclaimed.
func (e *endpoint) Matched(_ context.Context, req *wire.StartdMatchedRequest) (*wire.StartdMatchedReply, error) {
	s := e.s
	if req.ClaimId == "" {
		return nil, status.Error(codes.InvalidArgument, "matched: empty claim id")
	}
	if _, err := parseJobAd(req.JobAd); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotByName(req.Slot)
	if sl == nil {
		return nil, status.Errorf(codes.NotFound, "matched: no slot %q", req.Slot)
	}
	if _, ok := sl.phase.(unclaimed); !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "matched: %s is %s, not %s", sl.name, sl.phase.status(), unclaimed{}.status())
	}
	m := matched{claimID: req.ClaimId}
	s.move(sl, m)
	time.AfterFunc(s.matchTimeout, func() { s.expireMatch(sl, m.claimID) })
	return &wire.StartdMatchedReply{}, nil
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

// RequestClaim claims a Matched slot for an agent if the claim id is the
// one the negotiator gave and the match still holds on a fresh measurement
// of the machine. A refusal is a reply, not an error, so that the agent can
// record why.
func (e *endpoint) RequestClaim(_ context.Context, req *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	s := e.s
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
	sl := s.slotByName(req.Slot)
	if sl == nil {
		return nil, status.Errorf(codes.NotFound, "request claim: no slot %q", req.Slot)
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
	ad := machineAd(s.adc, m, sl.view(), now)
	if !classad.Match(job, ad) {
		s.move(sl, unclaimed{})
		why := "the job's requirements are false for the machine"
		if !ad.EvalAttrAgainst("Requirements", job).IsTrue() {
			why = "the machine's START expression is false for the job"
		}
		s.log.Info("claim refused", "slot", sl.name, "reason", why)
		return refuse("%s: the match no longer holds: %s", sl.name, why), nil
	}
	c := &claim{id: req.ClaimId, agent: req.Agent, owner: evalString(job, "Owner"), jobID: jobID(job), job: job}
	sl.renewed = now
	s.move(sl, claimedIdle{claim: c})
	s.expireIdleClaimAfter(sl, c.id)
	return &wire.RequestClaimReply{Accepted: true, MachineAd: machineAd(s.adc, m, sl.view(), now).String()}, nil
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
func (e *endpoint) ActivateClaim(_ context.Context, req *wire.ActivateClaimRequest) (*wire.ActivateClaimReply, error) {
	s := e.s
	job, err := parseJobAd(req.JobAd)
	if err != nil {
		return nil, err
	}
	if req.ShadowAddr == "" {
		return nil, status.Error(codes.InvalidArgument, "activate claim: no shadow address")
	}
	m, err := s.snapshot()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "activate claim: measure machine: %v", err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, c := s.slotByClaim(req.ClaimId)
	if sl == nil {
		return nil, status.Error(codes.NotFound, "activate claim: unknown claim id")
	}
	idle, ok := sl.phase.(claimedIdle)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "activate claim: %s is %s, not %s", sl.name, sl.phase.status(), claimedIdle{}.status())
	}
	if !machineAd(s.adc, m, sl.view(), now).EvalExpr(s.adc.policy.start, job).IsTrue() {
		return nil, status.Errorf(codes.FailedPrecondition, "activate claim: the machine's START expression is not true for job %s", jobID(job))
	}
	sl.renewed = now
	spec := starter.Spec{
		Slot:       sl.name,
		Host:       s.cfg.Name,
		ClaimID:    c.id,
		JobAd:      req.JobAd,
		ShadowAddr: req.ShadowAddr,
		Secret:     req.Secret,
		CertFile:   s.cfg.CertFile,
		KeyFile:    s.cfg.KeyFile,
		CAFile:     s.cfg.CAFile,
		Sandbox:    s.cfg.Sandbox,
	}
	r, err := startStarter(s.cfg.StarterCommand, idle.starter, s.cfg.ExecuteDir, sl.short(), spec)
	if err != nil {
		s.log.Error("start starter", "slot", sl.name, "err", err)
		return nil, status.Errorf(codes.Internal, "activate claim: %v", err)
	}
	r.job = job
	s.move(sl, claimedBusy{claim: c, run: r})
	s.log.Info("starter started", "slot", sl.name, "pid", r.proc.cmd.Process.Pid, "scratch", r.scratch)
	s.runs.Go(func() { s.reap(sl, r) })
	return &wire.ActivateClaimReply{}, nil
}

// reap waits for a job's end. A slot whose job ended by itself returns to
// Claimed/Idle for the agent to reuse, keeping the starter; a preempted
// one becomes Unclaimed (the next policy evaluation decides whether the
// owner has it), and its starter, if it finished the job just before it
// was told to stop, goes.
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
			s.move(sl, unclaimed{})
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
		if p, ok := sl.phase.(claimedIdle); ok && p.claim.id == claimID && time.Since(sl.enteredActivity) >= s.claimIdleTimeout {
			s.log.Info("idle claim released", "slot", sl.name, "idle", s.claimIdleTimeout)
			s.move(sl, unclaimed{})
		}
	})
}

// ReleaseClaim ends a claim: a running starter is killed (SIGTERM, SIGKILL
// after a grace period) and its scratch directory removed before the slot
// becomes Unclaimed. It returns when that is done, or when ctx ends if the
// job is already being vacated by the owner policy.
func (e *endpoint) ReleaseClaim(ctx context.Context, req *wire.ReleaseClaimRequest) (*wire.ReleaseClaimReply, error) {
	s := e.s
	s.mu.Lock()
	sl, c := s.slotByClaim(req.ClaimId)
	if sl == nil {
		s.mu.Unlock()
		return nil, status.Error(codes.NotFound, "release claim: unknown claim id")
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
		// Already on its way out: wait for it.
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
		s.move(sl, unclaimed{})
	}
	return &wire.ReleaseClaimReply{}, nil
}

// KeepAlive renews a claim's lease. A claim whose agent sends none for
// the lease time (ClaimLease) is released, its job vacated.
func (e *endpoint) KeepAlive(_ context.Context, req *wire.KeepAliveRequest) (*wire.KeepAliveReply, error) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, _ := s.slotByClaim(req.ClaimId)
	if sl == nil {
		return nil, status.Error(codes.NotFound, "keepalive: unknown claim id")
	}
	sl.renewed = time.Now()
	return &wire.KeepAliveReply{LeaseSeconds: int32(s.cfg.ClaimLease / time.Second)}, nil
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

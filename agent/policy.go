package agent

import (
	"context"
	"fmt"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// policyLoop evaluates the jobs' periodic policy expressions, as HTCondor's
// schedd does every PERIODIC_EXPR_INTERVAL.
func (a *Agent) policyLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.PeriodicInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.evalPeriodic(ctx)
		}
	}
}

// policyAction is what a job's periodic expressions ask for.
type policyAction struct {
	id            jobqueue.JobID
	do            string // "remove", "hold", "release", "vacate", "expire"
	reason        string
	code, subcode int // of a hold: HoldReasonCode and HoldReasonSubCode
}

// periodicDecision applies HTCondor's order: PeriodicRemove first, then
// PeriodicHold for jobs that are not held, PeriodicRelease for held ones.
// Only an expression that is exactly true acts; undefined or error does
// nothing. A running job that has run longer than its allowed_job_duration
// or allowed_execute_duration, at now, is held.
func periodicDecision(id jobqueue.JobID, ad *classad.ClassAd, now time.Time) (policyAction, bool) {
	st := statusOf(ad)
	if _, kept := ad.Lookup(AttrLeaveJobInQueue); kept && st == Completed && !keptInQueue(ad) {
		// A completed job whose LeaveJobInQueue ended (a spooled one,
		// its outputs never fetched).
		return policyAction{id: id, do: "expire"}, true
	}
	if st == Removed || st == Completed {
		return policyAction{}, false
	}
	if reason, ok := policySays(ad, AttrPeriodicRemove); ok {
		return policyAction{id: id, do: "remove", reason: reason}, true
	}
	if st == Held {
		if reason, ok := policySays(ad, AttrPeriodicRelease); ok {
			return policyAction{id: id, do: "release", reason: reason}, true
		}
		return policyAction{}, false
	}
	if reason, code, ok := durationExceeded(ad, now); ok {
		return policyAction{id: id, do: "hold", reason: reason, code: code}, true
	}
	if reason, ok := policySays(ad, AttrPeriodicHold); ok {
		reason, subcode := holdDetails(ad, reason, AttrPeriodicHoldReason, AttrPeriodicHoldSubCode)
		return policyAction{id: id, do: "hold", reason: reason, code: holdByJobPolicy, subcode: subcode}, true
	}
	if st.runs() {
		if reason, ok := policySays(ad, AttrPeriodicVacate); ok {
			return policyAction{id: id, do: "vacate", reason: reason}, true
		}
	}
	return policyAction{}, false
}

// durationExceeded reports whether a running job has run longer than its
// AllowedJobDuration or AllowedExecuteDuration (seconds), with HTCondor's
// hold codes. A run is Running from its process's start, after its input
// transfer (JobCurrentStartDate): both limits count from there.
func durationExceeded(ad *classad.ClassAd, now time.Time) (reason string, code int, exceeded bool) {
	if statusOf(ad) != Running {
		return "", 0, false
	}
	start, ok := ad.EvalInt(AttrJobCurrentStartDate)
	if !ok {
		return "", 0, false
	}
	ran := now.Unix() - start
	for _, limit := range []struct {
		attr, what string
		code       int
	}{{AttrAllowedJobDuration, "job", holdJobDurationExceeded}, {AttrAllowedExecuteDuration, "execute", holdExecuteDurationExceeded}} {
		if max, ok := ad.EvalInt(limit.attr); ok && max > 0 && ran > max {
			return fmt.Sprintf("The job exceeded allowed %s duration of %d seconds", limit.what, max), limit.code, true
		}
	}
	return "", 0, false
}

// policySays reports whether the job's policy expression attr is exactly
// true, and says so as HoldReason or RemoveReason do in HTCondor.
func policySays(ad *classad.ClassAd, attr string) (string, bool) {
	e, ok := ad.Lookup(attr)
	if !ok || !ad.Eval(attr).IsTrue() {
		return "", false
	}
	return fmt.Sprintf("The job attribute %s expression '%s' evaluated to TRUE", attr, e), true
}

// holdDetails is the reason and subcode of a hold by a policy expression:
// the job's own (periodic_hold_reason and _subcode, on_exit_hold_reason
// and _subcode), evaluated against its ad, where they give a string and
// an integer; else reason and 0.
func holdDetails(ad *classad.ClassAd, reason, reasonAttr, subcodeAttr string) (string, int) {
	if r, _ := ad.EvalString(reasonAttr); r != "" {
		reason = r
	}
	subcode, _ := ad.EvalInt(subcodeAttr)
	return reason, int(subcode)
}

func (a *Agent) evalPeriodic(ctx context.Context) {
	var actions []policyAction
	now := time.Now()
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) {
			return true
		}
		if act, ok := periodicDecision(id, ad, now); ok {
			actions = append(actions, act)
		}
		return true
	})
	for _, act := range actions {
		var err error
		switch act.do {
		case "remove":
			err = a.remove(ctx, act.id, act.reason)
		case "hold":
			err = a.hold(ctx, act.id, act.reason, act.code, act.subcode)
		case "release":
			err = a.releaseBy(ctx, act.id, act.reason)
		case "vacate":
			a.askPolicyVacate(act.id)
		case "expire":
			err = a.expireCompleted(ctx, act.id)
		}
		if err != nil {
			a.log.Warn("job policy", "job", act.id, "action", act.do, "err", err)
		}
	}
}

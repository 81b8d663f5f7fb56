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
	id      jobqueue.JobID
	do      string // "remove", "hold", "release", "expire"
	reason  string
	subcode int // of a hold: HoldReasonSubCode
}

// periodicDecision applies HTCondor's order: PeriodicRemove first, then
// PeriodicHold for jobs that are not held, PeriodicRelease for held ones.
// Only an expression that is exactly true acts; undefined or error does
// nothing.
func periodicDecision(id jobqueue.JobID, ad *classad.ClassAd) (policyAction, bool) {
	st := statusOf(ad)
	if st == Completed && spooled(ad) && !waitsForFetch(ad) {
		// A spooled job whose LeaveJobInQueue ended, its outputs
		// never fetched.
		return policyAction{id: id, do: "expire"}, true
	}
	if st == Removed || st == Completed {
		return policyAction{}, false
	}
	says := func(attr string) (string, bool) { return policySays(ad, attr) }
	if reason, ok := says(AttrPeriodicRemove); ok {
		return policyAction{id: id, do: "remove", reason: reason}, true
	}
	if st == Held {
		if reason, ok := says(AttrPeriodicRelease); ok {
			return policyAction{id: id, do: "release", reason: reason}, true
		}
		return policyAction{}, false
	}
	if reason, ok := says(AttrPeriodicHold); ok {
		reason, subcode := holdDetails(ad, reason, AttrPeriodicHoldReason, AttrPeriodicHoldSubCode)
		return policyAction{id: id, do: "hold", reason: reason, subcode: subcode}, true
	}
	return policyAction{}, false
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
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) {
			return true
		}
		if act, ok := periodicDecision(id, ad); ok {
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
			err = a.hold(ctx, act.id, act.reason, holdByJobPolicy, act.subcode)
		case "release":
			err = a.releaseBy(ctx, act.id, act.reason)
		case "expire":
			err = a.expireSpooled(ctx, act.id)
		}
		if err != nil {
			a.log.Warn("job policy", "job", act.id, "action", act.do, "err", err)
		}
	}
}

package agent

import (
	"context"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// claimRetryInterval is how long the agent waits before it asks again for
// a slot that is vacating a job for its claim.
const claimRetryInterval = time.Second

// requestClaim asks the startd for the slot c was matched to, for r's job
// (ad), and returns the machine ad the startd sends with its acceptance.
// A slot matched by preemption first vacates the job it runs; while it
// does, the startd answers pending, and the claim is asked for again
// every claimRetryInterval: a pending claim is not a refusal. The startd
// bounds the wait (the vacated job is killed after MaxVacateTime). The
// request is given up when it is refused, when the startd cannot be
// reached, when the job is removed, held or no longer idle meanwhile, or
// when ctx ends (the agent stops).
// A removal or hold asked for before the claim was given up is completed
// here, as there is no shadow to complete it.
func (a *Agent) requestClaim(ctx context.Context, c *claim, r *run, ad *classad.ClassAd) (machineAd string, ok bool) {
	defer func() {
		if !ok {
			a.completeStop(ctx, r)
		}
	}()
	req := &wire.RequestClaimRequest{Slot: c.slot, ClaimId: c.id, JobAd: ad.String(), Agent: a.cfg.Name}
	logged := false
	for {
		reply, err := a.client.requestClaim(ctx, c.startdAddr, req)
		switch {
		case err != nil:
			a.log.Info("claim request failed", "job", r.id, "slot", c.slot, "err", err)
			return "", false
		case reply.Accepted:
			return reply.MachineAd, true
		case !reply.Pending:
			a.log.Info("claim refused", "job", r.id, "slot", c.slot, "reason", reply.Reason)
			return "", false
		}
		if !logged {
			a.log.Info("claim pending", "job", r.id, "slot", c.slot, "reason", reply.Reason)
			logged = true
		}
		t := time.NewTimer(claimRetryInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", false
		}
		if action, _ := r.stopAction(); action != actionNone || a.jobs.status(r.id) != Idle {
			return "", false
		}
	}
}

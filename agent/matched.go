package agent

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// agentService receives the negotiator's match notifications.
type agentService struct {
	wire.UnimplementedAgentServer
	a *Agent
}

// Matched starts claiming the matched slot for the job. A job that is no
// longer idle (removed, held, running on a match from another pool)
// refuses the match, and the startd is told to free the slot (every slot
// of a gang).
func (s *agentService) Matched(ctx context.Context, req *wire.MatchedRequest) (*wire.MatchedReply, error) {
	id, err := jobqueue.ParseJobID(req.JobId)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.ClaimId == "" || req.StartdAddr == "" {
		return nil, status.Error(codes.InvalidArgument, "match without claim id or startd address")
	}
	if st := s.a.jobs.status(id); st != Idle {
		s.turnDown(req)
		return nil, status.Errorf(codes.FailedPrecondition, "job %s is not idle", id)
	}
	if ad, ok := s.a.queue.Get(id); ok && isLocal(ad) {
		s.turnDown(req)
		return nil, status.Errorf(codes.FailedPrecondition, "job %s runs on the submit machine", id)
	}
	if err := s.a.startRun(id, req); err != nil {
		s.turnDown(req)
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	// HTCondor counts the negotiator's matches of each job; a job that runs
	// on a reused claim is not matched.
	if _, err := s.a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
		n, _ := ad.EvalInt(AttrNumJobMatches)
		return step{set: change{AttrNumJobMatches: classad.Int(n + 1), AttrLastMatchTime: classad.Int(time.Now().Unix())}}, nil
	}); err != nil {
		s.a.log.Warn("count match", "job", id, "err", err)
	}
	return &wire.MatchedReply{}, nil
}

// turnDown tells the startd of a refused match to free its slot, in the
// background (the negotiator waits for the answer to Matched); a stopping
// agent leaves the slot to its claim's lease.
func (s *agentService) turnDown(req *wire.MatchedRequest) {
	s.a.goTracked(func() {
		s.a.client.releaseClaim(s.a.runCtx, req.StartdAddr, req.ClaimId)
		for _, m := range req.Gang {
			if m.ClaimId != req.ClaimId {
				s.a.client.releaseClaim(s.a.runCtx, m.StartdAddr, m.ClaimId)
			}
		}
	})
}

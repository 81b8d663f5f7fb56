package startd

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// Vacate carries out the matchmaker's word that a reservation's window
// keeps the claim's job off the slot: a running (or suspended) job is
// vacated, checkpointed where it can be, back to its agent's queue, and
// the slot is Unclaimed once it is gone; a claim with no job running is
// dropped. It does nothing if the slot's claim is not the one the
// matchmaker saw (its JobId), so that a late word spares a newer claim.
func (e *endpoint) Vacate(_ context.Context, req *wire.StartdVacateRequest) (*wire.StartdVacateReply, error) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotByName(req.Slot)
	if sl == nil {
		return nil, status.Errorf(codes.NotFound, "vacate: no slot %q", req.Slot)
	}
	c := claimOf(sl.phase)
	if c == nil || c.jobID != req.JobId {
		return &wire.StartdVacateReply{}, nil
	}
	switch sl.phase.(type) {
	case claimedIdle:
		s.log.Info("dropping claim for a reservation", "slot", sl.name, "owner", c.owner, "reason", req.Reason)
		s.move(sl, unclaimed{})
	case claimedBusy, claimedSuspended:
		s.log.Info("vacating job for a reservation", "slot", sl.name, "job", c.jobID, "owner", c.owner, "reason", req.Reason)
		s.evict(sl, vacateJob, "")
	}
	return &wire.StartdVacateReply{}, nil
}

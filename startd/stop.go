package startd

import (
	"errors"
	"sync"
)

// ErrStopFast, as the cause of the cancellation of Serve's context (see
// context.WithCancelCause), makes the startd kill its running jobs at
// once, as condor_off -fast does, where it would otherwise vacate them
// (checkpointing them where it can). Either way the jobs run again
// elsewhere.
var ErrStopFast = errors.New("startd: fast shutdown")

// peaceful ends Serve once every job has finished, after StopPeacefully.
type peaceful struct {
	once sync.Once
	// asked is set by StopPeacefully; guarded by Startd.mu.
	asked bool
	// done is closed once no slot has a claim.
	done chan struct{}
}

// StopPeacefully takes the machine out of service as a drain does, and
// makes Serve return once no slot has a claim: the running jobs finish
// first and no new one starts (condor_off -peaceful). Unlike a drain it
// is not recorded: a startd started again serves as configured.
func (s *Startd) StopPeacefully() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peaceful.asked {
		return
	}
	s.peaceful.asked = true
	if !s.adc.draining {
		s.startDraining()
	}
	s.log.Info("stopping peacefully: once the running jobs have finished")
	s.checkPeaceful()
	s.notify()
}

// checkPeaceful ends a peaceful stop once no slot has a claim. It must be
// called with s.mu held.
func (s *Startd) checkPeaceful() {
	if !s.peaceful.asked {
		return
	}
	for _, sl := range s.slots {
		if claimOf(sl.phase) != nil || runOf(sl.phase) != nil {
			return
		}
	}
	s.peaceful.once.Do(func() { close(s.peaceful.done) })
}

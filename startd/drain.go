package startd

import (
	"harrier.dev/harrier/classad"
)

// drainStart is START while the machine drains.
var drainStart = classad.Literal(classad.Bool(false))

// Drain takes the machine out of service, as condor_drain does: from now
// on START is false, whatever the configuration says (and a
// reconfiguration keeps it so), so the negotiator matches nothing here;
// an idle slot goes to its owner and a claim with no job running is
// released at the next evaluation; the ads say Draining = true. A running
// job finishes (graceful); with quick it is vacated now, so that it runs
// again elsewhere (checkpointed where it can be). Drain returns the names
// of the slots whose jobs it vacated.
func (s *Startd) Drain(quick bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adc.draining {
		s.adc.draining = true
		s.configuredStart = s.adc.policy.start
		s.adc.policy.start = drainStart
		s.log.Info("draining", "quick", quick)
	}
	var vacated []string
	if quick {
		for _, sl := range s.slots {
			switch sl.phase.(type) {
			case claimedBusy, claimedSuspended:
				s.evict(sl, vacateJob, "")
				vacated = append(vacated, sl.name)
			}
		}
	}
	s.notify()
	return vacated
}

// CancelDrain puts a draining machine back in service: START is the
// configuration's again.
func (s *Startd) CancelDrain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adc.draining {
		return
	}
	s.adc.draining = false
	s.adc.policy.start = s.configuredStart
	s.log.Info("drain cancelled")
	s.notify()
}

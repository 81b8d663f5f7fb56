package startd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/classad"
)

// drainStart is START while the machine drains.
var drainStart = classad.Literal(classad.Bool(false))

// drainFile, in the execute directory, says that the machine drains: a
// drain lasts across the startd's restarts until it is cancelled, as
// condor_drain's does across the startd's. Only its presence counts; it
// holds when the drain began, for the administrator.
const drainFile = "draining"

// Drain takes the machine out of service, as condor_drain does: from now
// on START is false, whatever the configuration says (and a
// reconfiguration keeps it so), so the negotiator matches nothing here;
// an idle slot goes to its owner and a claim with no job running is
// released at the next evaluation; the ads say Draining = true. A running
// job finishes (graceful); with quick it is vacated now, so that it runs
// again elsewhere (checkpointed where it can be). Drain returns the names
// of the slots whose jobs it vacated. The drain is recorded in the
// execute directory first, so that a restarted startd drains on; if it
// cannot be recorded, nothing changes and Drain says why.
func (s *Startd) Drain(quick bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adc.draining {
		path := filepath.Join(s.cfg.ExecuteDir, drainFile)
		if err := atomicfile.Write(path, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("drain: record it: %w", err)
		}
		s.startDraining()
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
	return vacated, nil
}

// startDraining holds START false. It must be called with s.mu held.
func (s *Startd) startDraining() {
	s.adc.draining = true
	s.configuredStart = s.adc.policy.start
	s.adc.policy.start = drainStart
}

// recoverDrain drains on if the startd was draining when it stopped.
func (s *Startd) recoverDrain() error {
	_, err := os.Stat(filepath.Join(s.cfg.ExecuteDir, drainFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read drain state: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startDraining()
	s.log.Info("draining, as before the restart")
	return nil
}

// CancelDrain puts a draining machine back in service: START is the
// configuration's again (unless it stops peacefully). If the drain's record cannot be removed, the
// machine drains on and CancelDrain says why.
func (s *Startd) CancelDrain() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adc.draining {
		return nil
	}
	if err := os.Remove(filepath.Join(s.cfg.ExecuteDir, drainFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cancel drain: %w", err)
	}
	if s.peaceful.asked {
		return nil // stopping peacefully, it stays out of service
	}
	s.adc.draining = false
	s.adc.policy.start = s.configuredStart
	s.log.Info("drain cancelled")
	s.notify()
	return nil
}

package startd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/classad"
)

// drainStart is START while the machine drains.
var drainStart = classad.Literal(classad.Bool(false))

// drainFile, in the execute directory, says that the machine drains: a
// drain lasts across the startd's restarts until it is cancelled, as
// condor_drain's does across the startd's. It holds when the drain began
// and, on its second line, why.
const drainFile = "draining"

// Schedule is how a drain treats the running jobs: condor_drain's
// schedules, and migration, which only Harrier has.
type Schedule int

const (
	// Migrate (the default) vacates at once, with a checkpoint, every job
	// that can be checkpointed here, so that it continues elsewhere; the
	// others retire, as with Graceful.
	Migrate Schedule = iota
	// Graceful lets every job run out its retirement time (see
	// retirement); then the jobs still running are vacated, checkpointed
	// where they can be. As HTCondor's, the retirement is coordinated:
	// every job may run until the last one's retirement ends, since the
	// machine is not empty before.
	Graceful
	// Quick vacates every job at once (checkpointed where it can be),
	// within its MaxVacateTime.
	Quick
	// Fast kills every job at once.
	Fast
)

var scheduleNames = [...]string{"migrate", "graceful", "quick", "fast"}

func (s Schedule) String() string { return scheduleNames[s] }

// DrainRequest is an administrator's drain.
type DrainRequest struct {
	Schedule Schedule
	// Reason is why, for the ads (DrainReason); empty keeps the reason of
	// a drain under way.
	Reason string
}

// DrainResult says what a drain did with the running jobs, by slot name.
type DrainResult struct {
	// Vacated are the slots whose jobs were vacated (or killed) at once.
	Vacated []string
	// Retiring are the slots whose jobs run on for their retirement time.
	Retiring []string
}

// Drain takes the machine out of service, as condor_drain does: from now
// on START is false, whatever the configuration says (and a
// reconfiguration keeps it so), so the negotiator matches nothing here;
// an idle slot goes to its owner and a claim with no job running is
// released at the next evaluation; the ads say Draining = true and
// DrainReason. The running jobs leave as req.Schedule says; a retiring
// job that has not finished when the retirement ends is vacated by the
// policy evaluation (see retire). A drain of a draining machine applies
// its schedule to the jobs still running. The drain is recorded in the
// execute directory first, so that a restarted startd drains on; if it
// cannot be recorded, nothing changes and Drain says why.
func (s *Startd) Drain(req DrainRequest) (DrainResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := req.Reason
	if reason == "" {
		reason = s.adc.drainReason
	}
	started := s.adc.drainStarted
	if !s.adc.drained {
		started = time.Now()
	}
	if !s.adc.drained || reason != s.adc.drainReason {
		path := filepath.Join(s.cfg.ExecuteDir, drainFile)
		text := started.UTC().Format(time.RFC3339) + "\n" + oneLine(reason) + "\n"
		if err := atomicfile.Write(path, []byte(text), 0o644); err != nil {
			return DrainResult{}, fmt.Errorf("drain: record it: %w", err)
		}
	}
	if !s.adc.draining {
		s.startDraining()
	}
	s.adc.drainReason, s.adc.drainStarted = oneLine(reason), started
	s.adc.drained = true
	s.log.Info("draining", "schedule", req.Schedule.String(), "reason", s.adc.drainReason)
	var res DrainResult
	for _, sl := range s.slots {
		switch sl.phase.(type) {
		case claimedBusy, claimedSuspended:
		default:
			continue
		}
		st := stay
		switch req.Schedule {
		case Fast:
			st = killJob
		case Quick:
			st = vacateJob
		case Migrate:
			if why := s.uncheckpointable(runOf(sl.phase).job); why != "" {
				s.log.Info("drain: the job retires", "slot", sl.name, "job", claimOf(sl.phase).jobID, "reason", why)
			} else {
				st = vacateJob
			}
		}
		if st == stay {
			res.Retiring = append(res.Retiring, sl.name)
			continue
		}
		s.log.Info("drain: "+st.String(), "slot", sl.name, "job", claimOf(sl.phase).jobID, "schedule", req.Schedule.String())
		s.evict(sl, st, "")
		res.Vacated = append(res.Vacated, sl.name)
	}
	s.notify()
	return res, nil
}

// uncheckpointable says why the job cannot be checkpointed on this
// machine, or "" if it can: it said want_checkpoint = false, it runs in
// its own container image (whose root's writes a checkpoint does not
// carry), it has GPUs (CRIU cannot dump their state), or the machine
// cannot checkpoint (no container sandbox or no checkpoint key). It must
// be called with s.mu held.
func (s *Startd) uncheckpointable(job *classad.ClassAd) string {
	switch {
	case s.adc.sandbox != "container":
		return "jobs are not run in containers here"
	case s.cfg.CheckpointKeyFile == "":
		return "this machine has no checkpoint key"
	case job == nil:
		return "no job ad"
	}
	if b, ok := job.EvalBool("WantCheckpoint"); ok && !b {
		return "want_checkpoint is false"
	}
	for _, image := range []string{"ContainerImage", "DockerImage"} {
		if ref, ok := job.EvalString(image); ok && ref != "" {
			return "the job runs in its own container image"
		}
	}
	if n, ok := job.EvalInt("RequestGpus"); ok && n > 0 {
		return "the job has GPUs"
	}
	return ""
}

// retirement is how long a job may run on a draining machine since it
// started: the machine's MAXJOBRETIREMENTTIME (evaluated against the job)
// or, if shorter, the job's own MaxJobRetirementTime, as in HTCondor. A
// value that is not a non-negative number counts as 0.
func (p *policy) retirement(machine, job *classad.ClassAd) time.Duration {
	d, _ := seconds(machine.EvalExpr(p.maxJobRetirementTime, job))
	if job != nil {
		if secs, ok := seconds(job.Eval("MaxJobRetirementTime")); ok && secs < d {
			d = secs
		}
	}
	return d
}

// retire vacates the jobs that still run on a drained machine once the
// last of their retirements has ended (HTCondor's coordinated graceful
// drain: the machine is not empty before, so none leaves earlier).
// machines are the slots' ads as evaluate built them, by slot id. It must
// be called with s.mu held.
func (s *Startd) retire(machines map[int]*classad.ClassAd, now time.Time) {
	if !s.adc.drained {
		return
	}
	var running []*slot
	var until time.Time
	for _, sl := range s.slots {
		var started time.Time
		switch sl.phase.(type) {
		case claimedBusy:
			started = sl.enteredActivity // the ad's JobStart
		case claimedSuspended:
			started = sl.enteredState
		default:
			continue
		}
		running = append(running, sl)
		end := started.Add(s.adc.policy.retirement(machines[sl.id], runOf(sl.phase).job))
		if end.After(until) {
			until = end
		}
	}
	if len(running) == 0 || now.Before(until) {
		return
	}
	for _, sl := range running {
		s.log.Info("drain: retirement over", "slot", sl.name, "job", claimOf(sl.phase).jobID)
		s.evict(sl, s.adc.policy.evictStep(machines[sl.id], runOf(sl.phase).job), "")
	}
}

// drainingStatus is the State and Activity a slot's ad shows: those of
// its phase, but, as in HTCondor, on a draining machine a running job is
// Retiring and a slot the drain keeps empty is Drained.
func drainingStatus(draining bool, st Status) (State, Activity) {
	switch {
	case !draining:
	case st == Status{Claimed, Busy}:
		return Claimed, "Retiring"
	case st == Status{Owner, Idle}:
		return "Drained", Idle
	}
	return st.State, st.Activity
}

// oneLine keeps the drain file's lines apart.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// startDraining holds START false. It must be called with s.mu held.
func (s *Startd) startDraining() {
	s.adc.draining = true
	s.configuredStart = s.adc.policy.start
	s.adc.policy.start = drainStart
}

// recoverDrain drains on if the startd was draining when it stopped.
func (s *Startd) recoverDrain() error {
	b, err := os.ReadFile(filepath.Join(s.cfg.ExecuteDir, drainFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read drain state: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startDraining()
	s.adc.drained = true
	lines := strings.SplitN(string(b), "\n", 3)
	s.adc.drainStarted, _ = time.Parse(time.RFC3339, lines[0])
	if len(lines) > 1 {
		s.adc.drainReason = lines[1]
	}
	s.log.Info("draining, as before the restart", "reason", s.adc.drainReason)
	return nil
}

// CancelDrain puts a draining machine back in service: START is the
// configuration's again (unless it stops peacefully), and retiring jobs
// run on. If the drain's record cannot be removed, the machine drains on
// and CancelDrain says why.
func (s *Startd) CancelDrain() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adc.draining {
		return nil
	}
	if err := os.Remove(filepath.Join(s.cfg.ExecuteDir, drainFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cancel drain: %w", err)
	}
	s.adc.drained = false
	s.adc.drainReason = ""
	if s.peaceful.asked {
		return nil // stopping peacefully, it stays out of service
	}
	s.adc.draining = false
	s.adc.policy.start = s.configuredStart
	s.log.Info("drain cancelled")
	s.notify()
	return nil
}

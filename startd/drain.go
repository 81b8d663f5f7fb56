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
// condor_drain's does across the startd's. Its lines: when the drain
// began, why, START while draining (empty: false), and resumeMark or
// nothing. A file with fewer lines, of an earlier version, is read as a
// plain drain.
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
	// Start is START while the machine drains, a ClassAd expression
	// (condor_drain -start); empty: false.
	Start string
	// Check must be exactly true on every slot's ad, else the drain is
	// refused (condor_drain -check); empty: no check.
	Check string
	// ResumeOnCompletion cancels the drain once no slot has a claim
	// (condor_drain -resume-on-completion).
	ResumeOnCompletion bool
}

// ErrDrainRefused is the error of a drain whose -check is not true, or
// whose expressions do not parse; nothing changed.
var ErrDrainRefused = errors.New("drain refused")

// DrainResult says what a drain did with the running jobs, by slot name.
type DrainResult struct {
	// Vacated are the slots whose jobs were vacated (or killed) at once.
	Vacated []string
	// Retiring are the slots whose jobs run on for their retirement time.
	Retiring []string
}

// Drain takes the machine out of service, as condor_drain does: from now
// on START is false (or req.Start), whatever the configuration says (and
// a reconfiguration keeps it so), so the negotiator matches nothing here;
// an idle slot goes to its owner and a claim with no job running is
// released at the next evaluation; the ads say Draining = true and
// DrainReason. The running jobs leave as req.Schedule says; a retiring
// job that has not finished when the retirement ends is vacated by the
// policy evaluation (see retire). A drain of a draining machine applies
// its schedule to the jobs still running. With req.ResumeOnCompletion the
// drain is cancelled once no slot has a claim (see resumeIfEmpty). A
// req.Check that is not true on every slot's ad refuses the drain
// (ErrDrainRefused). The drain is recorded in the execute directory
// first, so that a restarted startd drains on; if it cannot be recorded,
// nothing changes and Drain says why.
func (s *Startd) Drain(req DrainRequest) (DrainResult, error) {
	var start, check classad.Expr
	for _, e := range []struct {
		flag, text string
		dst        *classad.Expr
	}{{"-start", req.Start, &start}, {"-check", req.Check, &check}} {
		if strings.TrimSpace(e.text) == "" {
			continue
		}
		x, err := classad.ParseExpr(e.text)
		if err != nil {
			return DrainResult{}, fmt.Errorf("%w: %s: %w", ErrDrainRefused, e.flag, err)
		}
		*e.dst = x
	}
	// The check reads the ads as they would be sent now.
	m, err := s.snapshot()
	if err != nil {
		return DrainResult{}, fmt.Errorf("drain: measure the machine: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !check.IsZero() {
		now := time.Now()
		for _, sl := range s.slots {
			if !machineAd(s.adc, m, sl.view(s.slots), now).EvalExpr(check, nil).IsTrue() {
				return DrainResult{}, fmt.Errorf("%w: -check %s is not true for %s", ErrDrainRefused, check, sl.name)
			}
		}
	}
	reason := req.Reason
	if reason == "" {
		reason = s.adc.drainReason
	}
	started := s.adc.drainStarted
	if !s.adc.drained {
		started = time.Now()
	}
	startText, resume := "", ""
	if !start.IsZero() {
		startText = start.String()
	}
	if req.ResumeOnCompletion {
		resume = resumeMark
	}
	text := strings.Join([]string{started.UTC().Format(time.RFC3339), oneLine(reason), startText, resume}, "\n") + "\n"
	if err := atomicfile.Write(filepath.Join(s.cfg.ExecuteDir, drainFile), []byte(text), 0o644); err != nil {
		return DrainResult{}, fmt.Errorf("drain: record it: %w", err)
	}
	s.whileDraining, s.resumeOnCompletion = start, req.ResumeOnCompletion
	s.adc.drained = true
	if !s.adc.draining {
		s.startDraining()
	} else if !s.peaceful.asked {
		s.adc.policy.start = s.drainingStart()
	}
	s.adc.drainReason, s.adc.drainStarted = oneLine(reason), started
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

// resumeMark, the drain file's fourth line, records -resume-on-completion.
const resumeMark = "resume-on-completion"

// startDraining holds START false, or -start's expression. It must be
// called with s.mu held.
func (s *Startd) startDraining() {
	s.adc.draining = true
	s.configuredStart = s.adc.policy.start
	s.adc.policy.start = s.drainingStart()
}

// drainingStart is START while the machine drains. It must be called
// with s.mu held.
func (s *Startd) drainingStart() classad.Expr {
	if s.adc.drained && !s.whileDraining.IsZero() && !s.peaceful.asked {
		return s.whileDraining
	}
	return drainStart
}

// resumeIfEmpty cancels a drain asked to resume on completion once no
// slot has a claim. It must be called with s.mu held.
func (s *Startd) resumeIfEmpty() {
	if !s.adc.drained || !s.resumeOnCompletion {
		return
	}
	for _, sl := range s.slots {
		if claimOf(sl.phase) != nil || runOf(sl.phase) != nil {
			return
		}
	}
	if err := s.cancelDrain(); err != nil {
		s.log.Error("resume on completion", "err", err)
		return
	}
	s.log.Info("drain complete: back in service (resume on completion)")
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
	lines := strings.Split(string(b), "\n")
	lines = append(lines, "", "", "", "") // a drain file of an earlier version has fewer lines
	s.adc.drainStarted, _ = time.Parse(time.RFC3339, lines[0])
	s.adc.drainReason = lines[1]
	if lines[2] != "" {
		if s.whileDraining, err = classad.ParseExpr(lines[2]); err != nil {
			s.log.Error("the drain's START does not parse: START is false", "start", lines[2], "err", err)
			s.whileDraining = classad.Expr{}
		}
	}
	s.resumeOnCompletion = lines[3] == resumeMark
	s.adc.drained = true
	s.startDraining()
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
	return s.cancelDrain()
}

// cancelDrain is CancelDrain with s.mu held.
func (s *Startd) cancelDrain() error {
	if !s.adc.draining {
		return nil
	}
	if err := os.Remove(filepath.Join(s.cfg.ExecuteDir, drainFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cancel drain: %w", err)
	}
	s.adc.drained = false
	s.adc.drainReason = ""
	s.whileDraining, s.resumeOnCompletion = classad.Expr{}, false
	if s.peaceful.asked {
		return nil // stopping peacefully, it stays out of service
	}
	s.adc.draining = false
	s.adc.policy.start = s.configuredStart
	s.log.Info("drain cancelled")
	s.notify()
	return nil
}

package startd

import (
	"errors"
	"fmt"
	"time"

	"harrier.dev/harrier/classad"
)

// Defaults of the policy expressions, chosen so that a machine with no
// policy configured runs jobs and never disturbs them, and so that a value
// that is undefined or an error never does something the owner did not ask
// for.
const (
	// START undefined (for instance because the job lacks an attribute
	// START refers to) is not true, so the job is not started: matching
	// wants Requirements to be exactly true.
	defaultStart = "true"
	defaultRank  = "0"
	// SUSPEND, PREEMPT and KILL act only when exactly true; undefined
	// leaves the job alone.
	defaultSuspend = "false"
	defaultPreempt = "false"
	defaultKill    = "false"
	// CONTINUE acts only when exactly true: a job suspended for the owner
	// stays suspended while CONTINUE is undefined (PREEMPT still applies).
	defaultContinue = "true"
	// WANT_SUSPEND undefined means false: SUSPEND is then not consulted,
	// so a job is not suspended needlessly.
	defaultWantSuspend = "false"
	// WANT_VACATE undefined means true: a job gets the chance to leave
	// gracefully before it is killed.
	defaultWantVacate = "true"
	// IS_OWNER is HTCondor's default: the owner holds the machine when
	// START is false whatever the job; undefined means not owner.
	defaultIsOwner = "(START =?= false)"
	// MaxVacateTime is HTCondor's MACHINE_MAX_VACATE_TIME default.
	defaultMaxVacateTime = "10 * 60"
	// MAXJOBRETIREMENTTIME is HTCondor's default: a drain's jobs get no
	// retirement time unless the administrator grants one.
	defaultMaxJobRetirementTime = "0"
)

// fallbackMaxVacate is used when MaxVacateTime is not a non-negative
// number.
const fallbackMaxVacate = 10 * time.Minute

// policy is the owner's policy expressions, parsed. They are evaluated
// with MY = the slot's machine ad and TARGET = the job's ad.
type policy struct {
	start, rank, suspend, cont, preempt, kill classad.Expr
	wantSuspend, wantVacate, isOwner          classad.Expr
	maxVacateTime, maxJobRetirementTime       classad.Expr
	// attrs are Config.Attrs, parsed, by name.
	attrs map[string]classad.Expr
}

// policyText is the policy as configured, by configuration key.
type policyText struct {
	key, text, def string
	dst            *classad.Expr
}

// parsePolicy parses every expression of cfg's policy, filling in the
// defaults. The error lists every expression that does not parse, each
// with its configuration key and the position of the error.
func parsePolicy(cfg Config) (policy, error) {
	var p policy
	var errs []error
	for _, e := range []policyText{
		{"START", cfg.Start, defaultStart, &p.start},
		{"RANK", cfg.Rank, defaultRank, &p.rank},
		{"SUSPEND", cfg.Suspend, defaultSuspend, &p.suspend},
		{"CONTINUE", cfg.Continue, defaultContinue, &p.cont},
		{"PREEMPT", cfg.Preempt, defaultPreempt, &p.preempt},
		{"KILL", cfg.Kill, defaultKill, &p.kill},
		{"WANT_SUSPEND", cfg.WantSuspend, defaultWantSuspend, &p.wantSuspend},
		{"WANT_VACATE", cfg.WantVacate, defaultWantVacate, &p.wantVacate},
		{"IS_OWNER", cfg.IsOwner, defaultIsOwner, &p.isOwner},
		{"MACHINE_MAX_VACATE_TIME", cfg.MaxVacateTime, defaultMaxVacateTime, &p.maxVacateTime},
		{"MAXJOBRETIREMENTTIME", cfg.MaxJobRetirementTime, defaultMaxJobRetirementTime, &p.maxJobRetirementTime},
	} {
		text := e.text
		if text == "" {
			text = e.def
		}
		x, err := classad.ParseExpr(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.key, err))
			continue
		}
		*e.dst = x
	}
	for name, text := range cfg.Attrs {
		x, err := classad.ParseExpr(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("STARTD_ATTRS: %s: %w", name, err))
			continue
		}
		if p.attrs == nil {
			p.attrs = map[string]classad.Expr{}
		}
		p.attrs[name] = x
	}
	return p, errors.Join(errs...)
}

// step is what one evaluation of the policy asks of a slot.
type step int

const (
	stay            step = iota
	becomeOwner          // Unclaimed or Matched → Owner
	becomeUnclaimed      // Owner → Unclaimed
	releaseClaim         // Claimed/Idle → Unclaimed
	suspendJob           // Claimed/Busy → Claimed/Suspended
	continueJob          // Claimed/Suspended → Claimed/Busy
	vacateJob            // Claimed/Busy or Suspended → Preempting/Vacating
	killJob              // → Preempting/Killing
)

var stepNames = [...]string{"stay", "become owner", "become unclaimed", "release claim", "suspend", "continue", "vacate", "kill"}

func (s step) String() string { return stepNames[s] }

// situation is everything one policy decision looks at.
type situation struct {
	status Status
	// machine is the slot's machine ad as it would be advertised now:
	// State, Activity, EnteredCurrentActivity, MyCurrentTime, the measured
	// KeyboardIdle and load, and so on.
	machine *classad.ClassAd
	// job is the running job's ad, or with no job running the ad of the
	// job the claim was made for; nil without a claim.
	job *classad.ClassAd
	// inActivity is how long the slot has been in its activity.
	inActivity time.Duration
	// leaseExpired is true if the claiming agent has not renewed the
	// claim within the lease.
	leaseExpired bool
}

// decide is the owner-policy state machine: given a slot's situation it
// returns the step to take and why. It is a pure function of its
// arguments, evaluated every polling interval.
//
// The transitions follow HTCondor's startd:
//
//	Owner        → Unclaimed      IS_OWNER is not true
//	Unclaimed    → Owner          IS_OWNER is true
//	Matched      → Owner          IS_OWNER is true (the owner came back before the claim)
//	Claimed/Idle → (release)      the lease expired, PREEMPT is true, or START is false for the claim's job
//	Claimed/Busy → Suspended      WANT_SUSPEND and SUSPEND are true
//	Claimed/Busy → Preempting     the lease expired or PREEMPT is true
//	Suspended    → Preempting     the lease expired or PREEMPT is true
//	Suspended    → Busy           CONTINUE is true
//	Preempting   → Vacating or Killing as WANT_VACATE says
//	Vacating     → Killing        KILL is true or MaxVacateTime has passed
func (p *policy) decide(s situation) (step, string) {
	isTrue := func(e classad.Expr) bool { return s.machine.EvalExpr(e, s.job).IsTrue() }
	preempt := func(why string) (step, string) {
		if st := p.evictStep(s.machine, s.job); st == killJob {
			return killJob, why + " (WANT_VACATE is false)"
		}
		return vacateJob, why
	}
	switch s.status {
	case Status{Owner, Idle}:
		if !isTrue(p.isOwner) {
			return becomeUnclaimed, "IS_OWNER is no longer true"
		}
	case Status{Unclaimed, Idle}, Status{Matched, Idle}:
		if isTrue(p.isOwner) {
			return becomeOwner, "IS_OWNER is true"
		}
	case Status{Claimed, Idle}:
		switch {
		case s.leaseExpired:
			return releaseClaim, "the claim lease expired"
		case isTrue(p.preempt):
			return releaseClaim, "PREEMPT is true"
		case isFalse(s.machine.EvalExpr(p.start, s.job)):
			return releaseClaim, "START is false"
		}
	case Status{Claimed, Busy}:
		switch {
		case s.leaseExpired:
			return preempt("the claim lease expired")
		case isTrue(p.wantSuspend) && isTrue(p.suspend):
			return suspendJob, "SUSPEND is true"
		case isTrue(p.preempt):
			return preempt("PREEMPT is true")
		}
	case Status{Claimed, Suspended}:
		switch {
		case s.leaseExpired:
			return preempt("the claim lease expired")
		case isTrue(p.preempt):
			return preempt("PREEMPT is true")
		case isTrue(p.cont):
			return continueJob, "CONTINUE is true"
		}
	case Status{Preempting, Vacating}:
		if isTrue(p.kill) {
			return killJob, "KILL is true"
		}
		if max := p.maxVacate(s.machine, s.job); s.inActivity > max {
			return killJob, fmt.Sprintf("the job did not vacate within MaxVacateTime (%v)", max)
		}
	}
	return stay, ""
}

// evictStep is how a running job leaves its slot: vacateJob, or killJob
// when WANT_VACATE is false for it. Only an explicit false skips the
// vacate: undefined is graceful.
func (p *policy) evictStep(machine, job *classad.ClassAd) step {
	if v, ok := machine.EvalExpr(p.wantVacate, job).BoolValue(); ok && !v {
		return killJob
	}
	return vacateJob
}

// maxVacate is how long a vacating job may take: the machine's
// MaxVacateTime or, if shorter, the job's JobMaxVacateTime.
func (p *policy) maxVacate(machine, job *classad.ClassAd) time.Duration {
	d := fallbackMaxVacate
	if secs, ok := seconds(machine.EvalExpr(p.maxVacateTime, job)); ok {
		d = secs
	}
	if job != nil {
		if secs, ok := seconds(job.Eval("JobMaxVacateTime")); ok && secs < d {
			d = secs
		}
	}
	return d
}

// seconds converts a non-negative number of seconds to a duration.
func seconds(v classad.Value) (time.Duration, bool) {
	f, ok := v.RealValue()
	if !ok || !(f >= 0) || f > 1e9 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// isFalse reports whether v is exactly the boolean false.
func isFalse(v classad.Value) bool {
	b, ok := v.BoolValue()
	return ok && !b
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// remove takes a job out of the queue. A job with a run is stopped first
// (see gracefulRemoval); its run then finishes the removal when the shadow
// reports.
func (a *Agent) remove(ctx context.Context, id jobqueue.JobID, reason string) error {
	if a.stopRun(id, actionRemove, reason, !a.gracefulRemoval(id)) {
		return nil
	}
	_, err := a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
		if st := statusOf(ad); !Removed.follows(st) {
			return step{}, fmt.Errorf("job %s is already leaving the queue", id)
		}
		return removal(reason), nil
	})
	if err != nil {
		return err
	}
	a.kick()
	return nil
}

// gracefulRemoval reports whether a running job that is removed gets its
// kill signal and grace time before SIGKILL: yes, as with HTCondor's
// GRACEFULLY_REMOVE_JOBS default, unless the job's WantGracefulRemoval
// (want_graceful_removal) says no.
func (a *Agent) gracefulRemoval(id jobqueue.JobID) bool {
	ad, ok := a.queue.Get(id)
	if !ok {
		return true
	}
	if b, ok := ad.EvalBool(AttrWantGracefulRemoval); ok {
		return b
	}
	return true
}

// removal is the step that takes a job out of the queue at a user's or
// its policy's request.
func removal(reason string) step {
	return step{to: Removed, set: change{AttrRemoveReason: classad.String(reason)},
		log: logs(joblog.Event{Type: joblog.Aborted, Reason: reason})}
}

// holding is the step that puts a job on hold; more events may precede
// the hold's (a terminated event, when the job's exit holds it).
func holding(reason string, code, subcode int, set change, before ...joblog.Event) step {
	if set == nil {
		set = change{}
	}
	set[AttrHoldReason] = classad.String(reason)
	set[AttrHoldReasonCode] = classad.Int(int64(code))
	set[AttrHoldReasonSubCode] = classad.Int(int64(subcode))
	held := joblog.Event{Type: joblog.Held, Reason: reason, Code: code, Subcode: subcode}
	return step{to: Held, set: set, log: logs(append(before, held)...)}
}

// hold puts a job on hold; a running job is stopped.
func (a *Agent) hold(ctx context.Context, id jobqueue.JobID, reason string, code, subcode int) error {
	_, err := a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
		switch st := statusOf(ad); {
		case st == Held:
			return step{}, fmt.Errorf("job %s is already held", id)
		case !Held.follows(st):
			return step{}, fmt.Errorf("job %s cannot be held in its state (%d)", id, st)
		}
		return holding(reason, code, subcode, nil), nil
	})
	if err != nil {
		return err
	}
	a.stopRun(id, actionHold, reason, false)
	a.kick()
	return nil
}

// release lets a held job run again, at a user's request.
func (a *Agent) release(ctx context.Context, id jobqueue.JobID, by string) error {
	return a.releaseBy(ctx, id, "via harrier release (by user "+by+")")
}

// releaseBy lets a held job run again, recording why.
func (a *Agent) releaseBy(ctx context.Context, id jobqueue.JobID, reason string) error {
	_, err := a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
		if statusOf(ad) != Held {
			return step{}, fmt.Errorf("job %s is not held", id)
		}
		return step{to: Idle, set: change{AttrReleaseReason: classad.String(reason)},
			log: logs(joblog.Event{Type: joblog.Released, Reason: reason})}, nil
	})
	if err != nil {
		return err
	}
	a.kick()
	return nil
}

// executing records that the job's process started, or was restored from
// its checkpoint (ev.RestoreSeconds, CRIU's restore time). A job held
// while its slot was being claimed stays held: its run is being stopped.
func (a *Agent) executing(ctx context.Context, r *run, ev shadow.Event) {
	r.executed = true
	a.metrics.starts.Inc()
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		if statusOf(ad) != Idle {
			return step{}, nil
		}
		starts, _ := ad.EvalInt(AttrNumJobStarts)
		now := time.Now().Unix()
		c := change{
			AttrNumJobStarts:        classad.Int(starts + 1),
			AttrJobCurrentStartDate: classad.Int(now),
			AttrRemoteHost:          classad.String(r.slot),
			AttrLastRemoteHost:      classad.String(r.slot),
		}
		if _, ok := ad.Lookup(AttrJobStartDate); !ok {
			c[AttrJobStartDate] = classad.Int(now)
		}
		a.recordMachineAttrs(c, ad, r.machine)
		// Restores and starts from the beginning are counted apart, and a
		// failed restore is recorded with its reason: the user sees why a
		// job that had a checkpoint lost its work.
		if ev.Restored {
			n, _ := ad.EvalInt(AttrNumRestores)
			c[AttrNumRestores] = classad.Int(n + 1)
			c[AttrLastCkptRestoreTime] = seconds(ev.RestoreSeconds)
		} else {
			n, _ := ad.EvalInt(AttrNumFreshStarts)
			c[AttrNumFreshStarts] = classad.Int(n + 1)
		}
		if ev.RestoreFailure != "" {
			n, _ := ad.EvalInt(AttrNumRestoreFailures)
			c[AttrNumRestoreFailures] = classad.Int(n + 1)
			c[AttrLastRestoreFailure] = classad.String(ev.RestoreFailure)
			c[AttrLastRestoreFailureTime] = classad.Int(now)
		}
		e := joblog.Event{Type: joblog.Execute, Host: r.startdAddr}
		switch {
		case ev.Restored:
			e.Reason = "Restored from its checkpoint."
		case ev.RestoreFailure != "":
			e.Reason = "Not restored from its checkpoint (" + ev.RestoreFailure + "): started from the beginning."
		}
		return step{to: Running, set: c, log: logs(e)}, nil
	})
	if err != nil {
		a.log.Error("record job start", "job", r.id, "err", err)
	}
}

// seconds is a duration as the job ad shows it: seconds, to the
// millisecond, so that a figure reads 1.158 and not 1.1583809999999999.
func seconds(s float64) classad.Value {
	return classad.Real(math.Round(s*1000) / 1000)
}

// checkpointFailed records a checkpoint that could not be taken or sent
// home; the job runs on, or (vacate) was stopped without one.
func (a *Agent) checkpointFailed(ctx context.Context, r *run, ev shadow.Event) {
	a.metrics.ckptFailed.Inc()
	if _, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		n, _ := ad.EvalInt(AttrNumCheckpointFailures)
		return step{set: change{
			AttrNumCheckpointFailures:     classad.Int(n + 1),
			AttrLastCheckpointFailure:     classad.String(ev.Reason),
			AttrLastCheckpointFailureTime: classad.Int(time.Now().Unix()),
		}}, nil
	}); err != nil {
		a.log.Error("record checkpoint failure", "job", r.id, "err", err)
	}
}

// suspended records that the job was suspended (by its machine's owner
// policy, or its owner), or let continue.
func (a *Agent) suspended(ctx context.Context, r *run, on bool, reason string) {
	from, to, ev := Running, Suspended, joblog.Event{Type: joblog.Suspended, Reason: reason}
	if !on {
		from, to, ev = Suspended, Running, joblog.Event{Type: joblog.Unsuspended}
	}
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		if statusOf(ad) != from {
			return step{}, nil
		}
		c := change{}
		if on {
			n, _ := ad.EvalInt(AttrNumJobSuspensions)
			c[AttrNumJobSuspensions] = classad.Int(n + 1)
		}
		return step{to: to, set: c, log: logs(ev)}, nil
	})
	if err != nil {
		a.log.Error("record suspension", "job", r.id, "err", err)
	}
}

// usage records a running job's resource use in its ad. These updates are
// frequent and cheap to lose, so they are best effort.
func (a *Agent) usage(ctx context.Context, r *run, ev shadow.Event) {
	_, err := a.jobs.apply(ctx, r.id, func(*classad.ClassAd) (step, error) {
		c := change{AttrRemoteUserCPU: classad.Real(ev.UserCPU), AttrRemoteSysCPU: classad.Real(ev.SysCPU)}
		if ev.Memory > 0 {
			c[AttrMemoryUsage] = classad.Int((ev.Memory + (1<<20 - 1)) >> 20)
		}
		if ev.MaxRSS > 0 {
			c[AttrResidentSetSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
		}
		return step{set: c}, nil
	})
	if err != nil {
		a.log.Warn("record usage", "job", r.id, "err", err)
	}
}

// finished applies the outcome a shadow reported to the job, in one move.
func (a *Agent) finished(ctx context.Context, r *run, ev shadow.Event) {
	action, reason := r.stopAction()
	var (
		decide func(ad *classad.ClassAd) (step, error)
		what   string
	)
	outcome := outcomeFailed
	defer func() { a.metrics.ended(outcome, ev) }()
	switch {
	case action == actionRemove:
		outcome = outcomeRemoved
		what, decide = "remove job", func(*classad.ClassAd) (step, error) { return removal(reason), nil }
	case action == actionHold:
		// The hold was recorded when it was asked for.
		outcome = outcomeHeld
		return
	case ev.Type == shadow.EventExited:
		outcome = outcomeExited
		what, decide = "apply job exit", func(ad *classad.ClassAd) (step, error) { return exited(ad, ev), nil }
	case ev.Type == shadow.EventHold:
		// The job may not have started (its program is missing, its
		// checkpoint refused): the hold comes from Idle then.
		outcome = outcomeHeld
		what, decide = "hold job", func(ad *classad.ClassAd) (step, error) {
			if statusOf(ad) == Held {
				return step{}, nil
			}
			return holding(ev.Reason, ev.Code, 0, nil), nil
		}
	case ev.Type == shadow.EventEvicted:
		outcome = outcomeEvicted
		e := joblog.Event{Type: joblog.Evicted, Reason: ev.Reason, UserCPU: ev.UserCPU, SysCPU: ev.SysCPU, WasCheckpointed: r.vacated}
		what, decide = "requeue evicted job", func(ad *classad.ClassAd) (step, error) { return requeue(ad, ev, e), nil }
	case !r.executed:
		a.startFailed(ctx, r, ev.Reason)
		return
	default: // failed or killed for reasons not the user's: run it again
		a.log.Warn("job run failed; requeued", "job", r.id, "reason", ev.Reason)
		e := joblog.Event{Type: joblog.Evicted, Reason: ev.Reason}
		what, decide = "requeue job", func(ad *classad.ClassAd) (step, error) { return requeue(ad, ev, e), nil }
	}
	ad, err := a.jobs.apply(ctx, r.id, decide)
	// The outcome is known only here: it waits for a queue whose database
	// is away, rather than be lost.
	for wait := time.Second; errors.Is(err, jobqueue.ErrUnavailable); wait = min(2*wait, 10*time.Second) {
		a.log.Warn(what+": job queue unavailable; trying again", "job", r.id, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			a.log.Error(what, "job", r.id, "err", err)
			return
		case <-time.After(wait):
		}
		ad, err = a.jobs.apply(ctx, r.id, decide)
	}
	if err != nil {
		a.log.Error(what, "job", r.id, "err", err)
		return
	}
	if statusOf(ad) == Held {
		// The claim is given up, as for a hold asked for while it ran.
		r.markStopped(actionHold, "")
	}
}

// requeue is the step that puts a job whose run ended before the job did
// back to Idle, with the run's remote I/O, and logs e, its eviction, with
// the run's figures. A job no longer running (removed or held meanwhile)
// is left as it is.
func requeue(ad *classad.ClassAd, ev shadow.Event, e joblog.Event) step {
	if !statusOf(ad).runs() {
		return step{}
	}
	rio := newRunIO(ev.Files)
	var c change
	if len(rio.files) > 0 {
		c = rio.change(ad)
	}
	return step{to: Idle, set: c, log: func(after *classad.ClassAd) []joblog.Event {
		rio.logTo(&e, after)
		return []joblog.Event{e}
	}}
}

// startFailed records a run that failed before the job started: its shadow
// could not start or could not set the job up at the startd. Such failures
// tend to repeat, and each one frees a slot that is matched again at once,
// so the job sits out a back-off (see startBackoff) before it is advertised
// again. NumShadowExceptions counts them, as in HTCondor.
func (a *Agent) startFailed(ctx context.Context, r *run, reason string) {
	a.log.Warn("job did not start; it waits before it is matched again", "job", r.id, "reason", reason)
	ad, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		if statusOf(ad) != Idle {
			return step{}, nil
		}
		n, _ := ad.EvalInt(AttrNumShadowExceptions)
		return step{set: change{
			AttrNumShadowExceptions:     classad.Int(n + 1),
			AttrLastShadowException:     classad.String(reason),
			AttrLastShadowExceptionDate: classad.Int(time.Now().Unix()),
		}}, nil
	})
	if err != nil {
		a.log.Error("record failed start", "job", r.id, "err", err)
		return
	}
	// Advertise the job again as soon as its back-off ends.
	time.AfterFunc(startBackoff(ad), a.kick)
}

// startBackoff is how long after its last failed start a job waits before
// it is advertised again: a second after the first failure, doubling with
// each further one, up to a minute; none once the job has started since.
func startBackoff(ad *classad.ClassAd) time.Duration {
	n, _ := ad.EvalInt(AttrNumShadowExceptions)
	if n <= 0 {
		return 0
	}
	if last, _ := ad.EvalInt(AttrLastShadowExceptionDate); last != 0 {
		if ran, _ := ad.EvalInt(AttrJobCurrentStartDate); ran > last {
			return 0
		}
	}
	return min(time.Second<<min(n-1, 6), time.Minute)
}

// exited is the step that applies the job's own exit to its ad (its own
// copy): its on_exit policy decides between leaving the queue, holding,
// and running again, and the terminated event is logged in each case. A
// job held while it ran stays held. An exit applies to a job still Idle
// too (its start was not recorded): refusing it would run the job again.
func exited(ad *classad.ClassAd, ev shadow.Event) step {
	from := statusOf(ad)
	if from != Idle && !from.runs() {
		return step{}
	}
	final := change{
		AttrExitBySignal:   classad.Bool(ev.BySignal),
		AttrRemoteUserCPU:  classad.Real(ev.UserCPU),
		AttrRemoteSysCPU:   classad.Real(ev.SysCPU),
		AttrCompletionDate: classad.Int(time.Now().Unix()),
	}
	// An exit has either a code or a signal, never what an earlier run
	// left: a policy asking ExitCode is 0 must not read the last run's.
	if ev.BySignal {
		final[AttrExitSignal] = classad.Int(int64(ev.Signal))
		final[AttrExitCode] = classad.Undefined()
	} else {
		final[AttrExitCode] = classad.Int(int64(ev.ExitCode))
		final[AttrExitSignal] = classad.Undefined()
	}
	if ev.MaxRSS > 0 {
		final[AttrImageSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
		final[AttrResidentSetSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
	}
	rio := newRunIO(ev.Files)
	maps.Copy(final, rio.change(ad))
	completions, _ := ad.EvalInt(AttrNumJobCompletions)
	final[AttrNumJobCompletions] = classad.Int(completions + 1)
	// The policy reads the exit.
	for name, v := range final {
		ad.SetValue(name, v)
	}
	term := joblog.Event{Type: joblog.Terminated, Normal: !ev.BySignal, ReturnValue: ev.ExitCode, Signal: ev.Signal,
		UserCPU: ev.UserCPU, SysCPU: ev.SysCPU}
	rio.logTo(&term, ad)
	switch {
	case ad.Eval(AttrOnExitHold).IsTrue():
		reason, _ := policySays(ad, AttrOnExitHold)
		reason, subcode := holdDetails(ad, reason, AttrOnExitHoldReason, AttrOnExitHoldSubCode)
		return holding(reason, holdByJobPolicy, subcode, final, term)
	case onExitRemove(ad):
		return step{to: Completed, set: final, log: logs(term)}
	case from == Idle:
		return step{set: final, log: logs(term)}
	default:
		return step{to: Idle, set: final, log: logs(term)}
	}
}

// onExitRemove evaluates the job's OnExitRemove; HTCondor's default, and
// the safe reading of undefined, is true. Retries are part of it: submit
// makes max_retries, success_exit_code and retry_until into an
// OnExitRemove that is false while the job should run again.
func onExitRemove(ad *classad.ClassAd) bool {
	v := ad.Eval(AttrOnExitRemove)
	if b, ok := v.BoolValue(); ok {
		return b
	}
	return true
}

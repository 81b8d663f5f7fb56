package agent

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// remove takes a job out of the queue. A running job is stopped first; its
// run then finishes the removal when the shadow reports.
func (a *Agent) remove(ctx context.Context, id jobqueue.JobID, reason string) error {
	if a.stopRun(id, actionRemove, reason) {
		return nil
	}
	st := a.jobs.status(id)
	if st == Removed || st == Completed {
		return fmt.Errorf("job %s is already leaving the queue", id)
	}
	ad, err := a.jobs.retire(ctx, id, change{AttrJobStatus: Removed.value(), AttrRemoveReason: classad.String(reason)})
	if err != nil {
		return err
	}
	a.logEvent(ad, joblog.Event{Type: joblog.Aborted, Reason: reason})
	a.kick()
	return nil
}

// hold puts a job on hold; a running job is stopped.
func (a *Agent) hold(ctx context.Context, id jobqueue.JobID, reason string, code, subcode int) error {
	ad, err := a.jobs.transition(ctx, id, func(ad *classad.ClassAd) (change, error) {
		st := statusOf(ad)
		if st == Held {
			return nil, fmt.Errorf("job %s is already held", id)
		}
		if st != Idle && st != Running && st != Suspended {
			return nil, fmt.Errorf("job %s cannot be held in its state (%d)", id, st)
		}
		return change{
			AttrJobStatus:         Held.value(),
			AttrHoldReason:        classad.String(reason),
			AttrHoldReasonCode:    classad.Int(int64(code)),
			AttrHoldReasonSubCode: classad.Int(int64(subcode)),
		}, nil
	})
	if err != nil {
		return err
	}
	a.stopRun(id, actionHold, reason)
	a.logEvent(ad, joblog.Event{Type: joblog.Held, Reason: reason, Code: code, Subcode: subcode})
	a.kick()
	return nil
}

// release lets a held job run again, at a user's request.
func (a *Agent) release(ctx context.Context, id jobqueue.JobID, by string) error {
	return a.releaseBy(ctx, id, "via harrier release (by user "+by+")")
}

// releaseBy lets a held job run again, recording why.
func (a *Agent) releaseBy(ctx context.Context, id jobqueue.JobID, reason string) error {
	ad, err := a.jobs.transition(ctx, id, func(ad *classad.ClassAd) (change, error) {
		if st := statusOf(ad); st != Held {
			return nil, fmt.Errorf("job %s is not held", id)
		}
		return change{AttrJobStatus: Idle.value(), AttrReleaseReason: classad.String(reason)}, nil
	})
	if err != nil {
		return err
	}
	a.logEvent(ad, joblog.Event{Type: joblog.Released, Reason: reason})
	a.kick()
	return nil
}

// executing records that the job's process started, or was restored from
// its checkpoint (ev.RestoreSeconds, CRIU's restore time).
func (a *Agent) executing(ctx context.Context, r *run, ev shadow.Event) {
	ad, err := a.jobs.transition(ctx, r.id, func(ad *classad.ClassAd) (change, error) {
		starts, _ := ad.EvalInt(AttrNumJobStarts)
		now := time.Now().Unix()
		c := change{
			AttrJobStatus:           Running.value(),
			AttrNumJobStarts:        classad.Int(starts + 1),
			AttrJobCurrentStartDate: classad.Int(now),
			AttrRemoteHost:          classad.String(r.slot),
			AttrLastRemoteHost:      classad.String(r.slot),
		}
		if _, ok := ad.Lookup(AttrJobStartDate); !ok {
			c[AttrJobStartDate] = classad.Int(now)
		}
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
		return c, nil
	})
	if err != nil {
		a.log.Error("record job start", "job", r.id, "err", err)
		return
	}
	r.executed = true
	e := joblog.Event{Type: joblog.Execute, Host: r.startdAddr}
	switch {
	case ev.Restored:
		e.Reason = "Restored from its checkpoint."
	case ev.RestoreFailure != "":
		e.Reason = "Not restored from its checkpoint (" + ev.RestoreFailure + "): started from the beginning."
	}
	a.logEvent(ad, e)
}

// seconds is a duration as the job ad shows it: seconds, to the
// millisecond, so that a figure reads 1.158 and not 1.1583809999999999.
func seconds(s float64) classad.Value {
	return classad.Real(math.Round(s*1000) / 1000)
}

// checkpointFailed records a checkpoint that could not be taken or sent
// home; the job runs on, or (vacate) was stopped without one.
func (a *Agent) checkpointFailed(ctx context.Context, r *run, ev shadow.Event) {
	if _, err := a.jobs.transition(ctx, r.id, func(ad *classad.ClassAd) (change, error) {
		n, _ := ad.EvalInt(AttrNumCheckpointFailures)
		return change{
			AttrNumCheckpointFailures:     classad.Int(n + 1),
			AttrLastCheckpointFailure:     classad.String(ev.Reason),
			AttrLastCheckpointFailureTime: classad.Int(time.Now().Unix()),
		}, nil
	}); err != nil {
		a.log.Error("record checkpoint failure", "job", r.id, "err", err)
	}
}

// suspended records that the execute machine suspended the job, or let
// it continue.
func (a *Agent) suspended(ctx context.Context, r *run, on bool, reason string) {
	from, to, ev := Running, Suspended, joblog.Event{Type: joblog.Suspended, Reason: reason}
	if !on {
		from, to, ev = Suspended, Running, joblog.Event{Type: joblog.Unsuspended}
	}
	ad, err := a.jobs.transition(ctx, r.id, func(ad *classad.ClassAd) (change, error) {
		if st := statusOf(ad); st != from {
			return nil, nil
		}
		c := change{AttrJobStatus: to.value()}
		if on {
			n, _ := ad.EvalInt(AttrNumJobSuspensions)
			c[AttrNumJobSuspensions] = classad.Int(n + 1)
		}
		return c, nil
	})
	if err != nil {
		a.log.Error("record suspension", "job", r.id, "err", err)
		return
	}
	a.logEvent(ad, ev)
}

// usage records a running job's resource use in its ad. These updates are
// frequent and cheap to lose, so they are best effort.
func (a *Agent) usage(ctx context.Context, r *run, ev shadow.Event) {
	_, err := a.jobs.transition(ctx, r.id, func(*classad.ClassAd) (change, error) {
		c := change{AttrRemoteUserCPU: classad.Real(ev.UserCPU), AttrRemoteSysCPU: classad.Real(ev.SysCPU)}
		if ev.Memory > 0 {
			c[AttrMemoryUsage] = classad.Int((ev.Memory + (1<<20 - 1)) >> 20)
		}
		if ev.MaxRSS > 0 {
			c[AttrResidentSetSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
		}
		return c, nil
	})
	if err != nil {
		a.log.Warn("record usage", "job", r.id, "err", err)
	}
}

// finished applies the outcome a shadow reported to the job.
func (a *Agent) finished(ctx context.Context, r *run, ev shadow.Event) {
	action, reason := r.stopAction()
	switch {
	case action == actionRemove:
		ad, err := a.jobs.retire(ctx, r.id, change{AttrJobStatus: Removed.value(), AttrRemoveReason: classad.String(reason)})
		if err == nil {
			a.logEvent(ad, joblog.Event{Type: joblog.Aborted, Reason: reason})
		}
	case action == actionHold:
		// The hold was recorded when it was asked for.
		a.clearRunning(ctx, r, Held)
	case ev.Type == shadow.EventExited:
		a.exited(ctx, r, ev)
	case ev.Type == shadow.EventHold:
		a.clearRunning(ctx, r, Idle)
		if err := a.hold(ctx, r.id, ev.Reason, ev.Code, 0); err != nil {
			a.log.Error("hold job", "job", r.id, "err", err)
		}
	case ev.Type == shadow.EventEvicted:
		ad := a.clearRunning(ctx, r, Idle)
		if ad != nil {
			a.logEvicted(ctx, r, ad, ev, joblog.Event{Type: joblog.Evicted, Reason: ev.Reason, UserCPU: ev.UserCPU, SysCPU: ev.SysCPU, WasCheckpointed: r.vacated})
		}
	case !r.executed:
		a.startFailed(ctx, r, ev.Reason)
	default: // failed or killed for reasons not the user's: run it again
		a.log.Warn("job run failed; requeued", "job", r.id, "reason", ev.Reason)
		ad := a.clearRunning(ctx, r, Idle)
		if ad != nil && r.executed {
			a.logEvicted(ctx, r, ad, ev, joblog.Event{Type: joblog.Evicted, Reason: ev.Reason})
		}
	}
}

// startFailed records a run that failed before the job started: its shadow
// could not start or could not set the job up at the startd. Such failures
// tend to repeat, and each one frees a slot that is matched again at once,
// so the job sits out a back-off (see startBackoff) before it is advertised
// again. NumShadowExceptions counts them, as in HTCondor.
func (a *Agent) startFailed(ctx context.Context, r *run, reason string) {
	a.log.Warn("job did not start; it waits before it is matched again", "job", r.id, "reason", reason)
	ad, err := a.jobs.transition(ctx, r.id, func(ad *classad.ClassAd) (change, error) {
		if st := statusOf(ad); st != Idle {
			return nil, nil
		}
		n, _ := ad.EvalInt(AttrNumShadowExceptions)
		return change{
			AttrNumShadowExceptions:     classad.Int(n + 1),
			AttrLastShadowException:     classad.String(reason),
			AttrLastShadowExceptionDate: classad.Int(time.Now().Unix()),
		}, nil
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

// clearRunning puts a job that no longer runs into state st, if it is still
// marked running.
func (a *Agent) clearRunning(ctx context.Context, r *run, st JobStatus) *classad.ClassAd {
	ad, err := a.jobs.transition(ctx, r.id, func(ad *classad.ClassAd) (change, error) {
		if cur := statusOf(ad); cur != Running && cur != Suspended {
			return nil, nil
		}
		return change{AttrJobStatus: st.value()}, nil
	})
	if err != nil {
		a.log.Error("update job after run", "job", r.id, "err", err)
		return nil
	}
	return ad
}

// exited applies the job's own exit: its on_exit policy decides between
// leaving the queue, holding, and running again.
func (a *Agent) exited(ctx context.Context, r *run, ev shadow.Event) {
	final := change{
		AttrExitBySignal:   classad.Bool(ev.BySignal),
		AttrRemoteUserCPU:  classad.Real(ev.UserCPU),
		AttrRemoteSysCPU:   classad.Real(ev.SysCPU),
		AttrCompletionDate: classad.Int(time.Now().Unix()),
	}
	if ev.BySignal {
		final[AttrExitSignal] = classad.Int(int64(ev.Signal))
	} else {
		final[AttrExitCode] = classad.Int(int64(ev.ExitCode))
	}
	if ev.MaxRSS > 0 {
		final[AttrImageSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
		final[AttrResidentSetSize] = classad.Int((ev.MaxRSS + 1023) / 1024)
	}
	ad, ok := a.queue.Get(r.id)
	if !ok {
		return
	}
	rio := newRunIO(ev.Files)
	maps.Copy(final, rio.change(ad))
	completions, _ := ad.EvalInt(AttrNumJobCompletions)
	final[AttrNumJobCompletions] = classad.Int(completions + 1)
	for name, v := range final {
		ad.SetValue(name, v)
	}
	term := joblog.Event{Type: joblog.Terminated, Normal: !ev.BySignal, ReturnValue: ev.ExitCode, Signal: ev.Signal,
		UserCPU: ev.UserCPU, SysCPU: ev.SysCPU}
	rio.logTo(&term, ad)
	switch {
	case ad.Eval(AttrOnExitHold).IsTrue():
		final[AttrJobStatus] = Idle.value()
		_, _ = a.jobs.transition(ctx, r.id, func(*classad.ClassAd) (change, error) { return final, nil })
		a.logEvent(ad, term)
		if err := a.hold(ctx, r.id, "The job attribute OnExitHold expression evaluated to TRUE", holdByJobPolicy, 0); err != nil {
			a.log.Error("hold job on exit", "job", r.id, "err", err)
		}
	case onExitRemove(ad) && !retry(ad):
		final[AttrJobStatus] = Completed.value()
		done, err := a.jobs.retire(ctx, r.id, final)
		if err != nil {
			a.log.Error("complete job", "job", r.id, "err", err)
			return
		}
		a.logEvent(done, term)
	default:
		final[AttrJobStatus] = Idle.value()
		if _, err := a.jobs.transition(ctx, r.id, func(*classad.ClassAd) (change, error) { return final, nil }); err != nil {
			a.log.Error("requeue job", "job", r.id, "err", err)
		}
		a.logEvent(ad, term)
	}
}

// retry reports whether a job that failed should run again under its
// max_retries: HTCondor's rule is that a job with MaxRetries leaves the
// queue when it succeeds (exit code 0, or SuccessExitCode) or has run more
// than MaxRetries times.
func retry(ad *classad.ClassAd) bool {
	max, ok := ad.EvalInt(AttrMaxRetries)
	if !ok {
		return false
	}
	if sig, _ := ad.EvalBool(AttrExitBySignal); !sig {
		code, _ := ad.EvalInt(AttrExitCode)
		success, ok := ad.EvalInt(AttrSuccessExitCode)
		if !ok {
			success = 0
		}
		if code == success {
			return false
		}
	}
	completions, _ := ad.EvalInt(AttrNumJobCompletions)
	return completions <= max
}

// onExitRemove evaluates the job's OnExitRemove; HTCondor's default, and
// the safe reading of undefined, is true.
func onExitRemove(ad *classad.ClassAd) bool {
	v := ad.Eval(AttrOnExitRemove)
	if b, ok := v.BoolValue(); ok {
		return b
	}
	return true
}

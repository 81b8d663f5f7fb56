package agent

import (
	"reflect"
	"slices"
)

// Reconfigure applies a re-read configuration to the running agent
// without touching its queue, claims or shadows: the limits on what
// users ask (Limits, but for MaxSubmissionBytes) hold from the next
// request on; a job already queued stays queued whatever the new
// limits say, as in HTCondor. The other settings need a restart:
// Reconfigure names those that changed (by their configuration keys) and
// keeps their old values. A configuration that does not check is
// refused whole, and the agent runs on as it was. Calls must not
// overlap.
func (a *Agent) Reconfigure(cfg Config) (restart []string, err error) {
	next, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	restart = a.needRestart(next)
	limits := next.Limits
	// The local socket's largest message was fixed when it opened.
	limits.MaxSubmissionBytes = a.cfg.Limits.MaxSubmissionBytes
	a.limits.Store(&limits)
	a.submitRate.setRate(limits.SubmitRate)
	a.log.Info("reconfigured", "max_jobs_per_owner", limits.MaxJobsPerOwner, "max_jobs_submitted", limits.MaxJobsSubmitted,
		"max_jobs_per_submission", limits.MaxJobsPerSubmission, "max_job_ad_bytes", limits.MaxAdBytes,
		"max_submissions_per_second", limits.SubmitRate)
	return restart, nil
}

// needRestart names the settings that differ between the running agent's
// configuration and next and that only a restart applies.
func (a *Agent) needRestart(next Config) []string {
	old := a.cfg
	var names []string
	for name, same := range map[string]bool{
		"AGENT_NAME":             old.Name == next.Name,
		"MATCHMAKER_ADDR":        old.MatchmakerAddr == next.MatchmakerAddr,
		"FLOCK_TO":               slices.Equal(old.FlockTo, next.FlockTo),
		"UPDATE_INTERVAL":        old.AdvertiseInterval == next.AdvertiseInterval,
		"CLAIM_WORKLIFE":         old.ClaimWorkLife == next.ClaimWorkLife,
		"PERIODIC_EXPR_INTERVAL": old.PeriodicInterval == next.PeriodicInterval,
		"SPOOL":                  old.CheckpointDir == next.CheckpointDir,
		"MAX_SUBMISSION_BYTES":   old.Limits.MaxSubmissionBytes == next.Limits.MaxSubmissionBytes,
		"shadow command":         reflect.DeepEqual(old.ShadowCommand, next.ShadowCommand),
		"GROUP_NAMES":            slices.Equal(old.AccountingGroups, next.AccountingGroups),
		"SYSTEM_JOB_MACHINE_ATTRS": slices.Equal(old.MachineAttrs, next.MachineAttrs) &&
			old.MachineAttrsHistory == next.MachineAttrsHistory,
	} {
		if !same {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

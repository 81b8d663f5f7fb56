package main

import (
	"fmt"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/wire"
)

// agentLimits reads the limits on what each local user may ask of the
// agent; a key not set keeps its default (agent.DefaultLimits).
func agentLimits(pc *poolConfig) (agent.Limits, error) {
	var l agent.Limits
	d := agent.DefaultLimits()
	for _, f := range []struct {
		key      string
		v        *int
		def, max int
	}{
		{"MAX_JOBS_PER_OWNER", &l.MaxJobsPerOwner, d.MaxJobsPerOwner, 1 << 30},
		{"MAX_JOBS_SUBMITTED", &l.MaxJobsSubmitted, d.MaxJobsSubmitted, 1 << 30},
		{"MAX_JOBS_PER_SUBMISSION", &l.MaxJobsPerSubmission, d.MaxJobsPerSubmission, 1 << 30},
		{"MAX_JOB_AD_BYTES", &l.MaxAdBytes, d.MaxAdBytes, wire.MaxMessage / 2},
		// The tools send no larger message.
		{"MAX_SUBMISSION_BYTES", &l.MaxSubmissionBytes, d.MaxSubmissionBytes, wire.MaxMessage / 2},
		{"MAX_SUBMISSIONS_PER_SECOND", &l.SubmitRate, d.SubmitRate, 1 << 20},
	} {
		n, err := pc.c.Int(f.key, int64(f.def))
		if err != nil {
			return l, err
		}
		if n < 1 || n > int64(f.max) {
			return l, fmt.Errorf("%s = %d: want a number from 1 to %d", f.key, n, f.max)
		}
		*f.v = int(n)
	}
	return l, nil
}

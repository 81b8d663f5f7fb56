package starter

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A claim refuses a first command that carries no job, or a job without
// what a starter needs, before it starts anything.
func TestServeClaimChecksTheFirstJob(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	noRunner := func(*Spec) Runner { t.Error("a runner was chosen"); return ProcessRunner{} }
	for in, want := range map[string]string{
		"":                                  "read the first job: EOF",
		`{"suspend":true}` + "\n":           "a command before any job",
		`{"job":{"job_ad":"[A=1]"}}` + "\n": "no shadow address",
		"ended\n":                           "read the first job: receive starter.Command",
	} {
		err := ServeClaim(t.Context(), strings.NewReader(in), io.Discard, noRunner, logger)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ServeClaim(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

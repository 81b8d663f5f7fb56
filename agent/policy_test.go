package agent

import (
	"testing"
	"time"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

func ad(t *testing.T, src string) *classad.ClassAd {
	t.Helper()
	a, err := classad.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPeriodicDecision(t *testing.T) {
	id := jobqueue.JobID{Cluster: 1}
	for _, tc := range []struct {
		ad   string
		want string
	}{
		{`[ JobStatus = 2; PeriodicHold = JobStatus == 2 ]`, "hold"},
		{`[ JobStatus = 2; PeriodicHold = true; PeriodicRemove = true ]`, "remove"},
		{`[ JobStatus = 5; PeriodicHold = true ]`, ""},
		{`[ JobStatus = 5; PeriodicRelease = true ]`, "release"},
		{`[ JobStatus = 1; PeriodicRelease = true ]`, ""},
		{`[ JobStatus = 1; PeriodicHold = undefined ]`, ""},
		{`[ JobStatus = 1; PeriodicHold = 1/0 ]`, ""},
		{`[ JobStatus = 1; PeriodicHold = NoSuchAttr > 3 ]`, ""},
		{`[ JobStatus = 4; PeriodicRemove = true ]`, ""},
		{`[ JobStatus = 2; PeriodicVacate = true ]`, "vacate"},
		{`[ JobStatus = 7; PeriodicVacate = true ]`, "vacate"},
		{`[ JobStatus = 1; PeriodicVacate = true ]`, ""},
		{`[ JobStatus = 2; PeriodicVacate = true; PeriodicHold = true ]`, "hold"},
	} {
		act, ok := periodicDecision(id, ad(t, tc.ad), time.Now())
		got := ""
		if ok {
			got = act.do
		}
		if got != tc.want {
			t.Errorf("%s: decided %q, want %q", tc.ad, got, tc.want)
		}
	}
	act, _ := periodicDecision(id, ad(t, `[ JobStatus = 2; PeriodicHold = true; PeriodicHoldReason = strcat("too ", "long"); PeriodicHoldSubCode = 40 + 2 ]`), time.Now())
	if act.reason != "too long" || act.subcode != 42 {
		t.Errorf("PeriodicHoldReason and PeriodicHoldSubCode ignored: %q, %d", act.reason, act.subcode)
	}
	act, _ = periodicDecision(id, ad(t, `[ JobStatus = 2; PeriodicHold = true ]`), time.Now())
	if act.reason != "The job attribute PeriodicHold expression 'true' evaluated to TRUE" || act.subcode != 0 {
		t.Errorf("a hold without reason or subcode: %q, %d", act.reason, act.subcode)
	}
}

// TestRetryPolicy evaluates the OnExitRemove that submit makes of
// max_retries = 2, success_exit_code = 3 and retry_until = ExitCode == 7,
// after each exit as the agent does.
func TestRetryPolicy(t *testing.T) {
	const policy = `JobMaxRetries = 2; OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode is 3 || (ExitCode == 7)`
	for _, tc := range []struct {
		exit string
		want bool
	}{
		{`ExitCode = 1; NumJobCompletions = 1`, false},
		{`ExitCode = 1; NumJobCompletions = 3`, true}, // retries used up
		{`ExitCode = 3; NumJobCompletions = 1`, true}, // success
		{`ExitCode = 7; NumJobCompletions = 1`, true}, // retry_until
		// Killed by a signal, the job has no ExitCode: ExitCode == 7 is
		// undefined, and so is the policy, which HTCondor and Harrier
		// read as leaving the queue.
		{`ExitBySignal = true; ExitSignal = 9; NumJobCompletions = 1`, true},
	} {
		if got := onExitRemove(ad(t, "[ "+policy+"; "+tc.exit+" ]")); got != tc.want {
			t.Errorf("after %s: leaves the queue %v, want %v", tc.exit, got, tc.want)
		}
	}
	// Without the expression, is keeps the policy defined: the signal
	// is a failure, retried.
	if onExitRemove(ad(t, `[ JobMaxRetries = 2; OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode is 0; ExitBySignal = true; NumJobCompletions = 1 ]`)) {
		t.Error("a job killed by a signal was not retried")
	}
}

func TestOnExitRemoveDefaultsToTrue(t *testing.T) {
	if !onExitRemove(ad(t, `[ A = 1 ]`)) || !onExitRemove(ad(t, `[ OnExitRemove = undefined ]`)) {
		t.Error("OnExitRemove missing or undefined should remove")
	}
	if onExitRemove(ad(t, `[ OnExitRemove = ExitCode == 0; ExitCode = 2 ]`)) {
		t.Error("OnExitRemove false kept the job leaving")
	}
}

func TestFilter(t *testing.T) {
	f, err := newFilterFor([]string{"3", "4.1"}, `Owner == "ann"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   jobqueue.JobID
		ad   string
		want bool
	}{
		{jobqueue.JobID{Cluster: 3, Proc: 7}, `[ Owner = "ann" ]`, true},
		{jobqueue.JobID{Cluster: 3, Proc: 7}, `[ Owner = "bob" ]`, false},
		{jobqueue.JobID{Cluster: 4, Proc: 1}, `[ Owner = "ann" ]`, true},
		{jobqueue.JobID{Cluster: 4, Proc: 2}, `[ Owner = "ann" ]`, false},
	} {
		if got := f.match(tc.id, ad(t, tc.ad)); got != tc.want {
			t.Errorf("match(%s, %s) = %v", tc.id, tc.ad, got)
		}
	}
	if _, err := newFilterFor(nil, "Owner =="); err == nil {
		t.Error("bad constraint accepted")
	}
	if _, err := newFilterFor([]string{"x.y"}, ""); err == nil {
		t.Error("bad id accepted")
	}
}

// TestDurationLimits: a running job held for outliving its
// allowed_job_duration (code 46) or allowed_execute_duration (47),
// counted from its current run's start; an idle or held one, or one
// within its limits, is left alone.
func TestDurationLimits(t *testing.T) {
	id := jobqueue.JobID{Cluster: 1}
	now := time.Unix(10_000, 0)
	for _, tc := range []struct {
		ad   string
		code int
	}{
		{`[ JobStatus = 2; JobCurrentStartDate = 9000; AllowedJobDuration = 600 ]`, 46},
		{`[ JobStatus = 2; JobCurrentStartDate = 9000; AllowedExecuteDuration = 999 ]`, 47},
		{`[ JobStatus = 2; JobCurrentStartDate = 9000; AllowedJobDuration = 1000; AllowedExecuteDuration = 1000 ]`, 0},
		{`[ JobStatus = 1; JobCurrentStartDate = 9000; AllowedJobDuration = 600 ]`, 0},
		{`[ JobStatus = 5; JobCurrentStartDate = 9000; AllowedJobDuration = 600 ]`, 0},
		{`[ JobStatus = 2; AllowedJobDuration = 600 ]`, 0},
	} {
		act, ok := periodicDecision(id, ad(t, tc.ad), now)
		if tc.code == 0 {
			if ok {
				t.Errorf("%s: %+v, want nothing done", tc.ad, act)
			}
			continue
		}
		if !ok || act.do != "hold" || act.code != tc.code || act.reason == "" {
			t.Errorf("%s: %+v, want a hold with code %d", tc.ad, act, tc.code)
		}
	}
}

package agent

import (
	"testing"

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
	} {
		act, ok := periodicDecision(id, ad(t, tc.ad))
		got := ""
		if ok {
			got = act.do
		}
		if got != tc.want {
			t.Errorf("%s: decided %q, want %q", tc.ad, got, tc.want)
		}
	}
	act, _ := periodicDecision(id, ad(t, `[ JobStatus = 2; PeriodicHold = true; PeriodicHoldReason = "too long" ]`))
	if act.reason != "too long" {
		t.Errorf("PeriodicHoldReason ignored: %q", act.reason)
	}
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		ad   string
		want bool
	}{
		{`[ ExitCode = 1; NumJobCompletions = 1 ]`, false}, // no MaxRetries
		{`[ MaxRetries = 2; ExitCode = 1; NumJobCompletions = 1 ]`, true},
		{`[ MaxRetries = 2; ExitCode = 1; NumJobCompletions = 3 ]`, false},
		{`[ MaxRetries = 2; ExitCode = 0; NumJobCompletions = 1 ]`, false},
		{`[ MaxRetries = 2; ExitCode = 3; SuccessExitCode = 3; NumJobCompletions = 1 ]`, false},
		{`[ MaxRetries = 2; ExitBySignal = true; ExitSignal = 9; NumJobCompletions = 1 ]`, true},
	} {
		if got := retry(ad(t, tc.ad)); got != tc.want {
			t.Errorf("retry(%s) = %v, want %v", tc.ad, got, tc.want)
		}
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

package matchmaker

import (
	"testing"
	"time"
)

// Reconfigure changes the cycle interval and the preemption
// requirements; an expression that does not parse changes nothing.
func TestReconfigure(t *testing.T) {
	ca := newTestCA(t)
	m, err := New(Config{
		Logger: quietLogger(), TLS: ca.serverTLS(t, "matchmaker@test"), ClientTLS: ca.clientTLS(t, "matchmaker@test"),
		Interval: time.Hour, Name: "negotiator@test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Reconfigure(Config{Interval: time.Minute, PreemptionRequirements: "RemoteUserPrio >"}); err == nil {
		t.Error("a PREEMPTION_REQUIREMENTS that does not parse was taken")
	}
	if interval, n := m.driver.settings(); interval != time.Hour || !n.PreemptionRequirements.IsZero() {
		t.Errorf("after a refused reconfiguration: %v, %q", interval, n.PreemptionRequirements)
	}
	if err := m.Reconfigure(Config{Interval: time.Minute, PreemptionRequirements: "RemoteUserPrio > SubmitterUserPrio"}); err != nil {
		t.Fatal(err)
	}
	if interval, n := m.driver.settings(); interval != time.Minute || n.PreemptionRequirements.String() != "RemoteUserPrio > SubmitterUserPrio" {
		t.Errorf("after Reconfigure: %v, %q", interval, n.PreemptionRequirements)
	}
}

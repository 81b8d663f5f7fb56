package matchmaker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A restarted accountant, from its file, has every user's priority, usage
// and run-time factor as before, so users keep their order.
func TestAccountantSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accountant.json")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAccountant(time.Hour, 1, map[string]float64{"carol": 3})
	if err := a.Persist(path); err != nil {
		t.Fatal(err)
	}
	a.Update(t0, map[string]int{"alice": 4, "bob": 1, "carol": 1})
	a.Update(t0.Add(30*time.Minute), map[string]int{"alice": 4, "bob": 1, "carol": 1})
	if err := a.SetFactor("bob", 10); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	before := a.Users()

	b := NewAccountant(time.Hour, 1, map[string]float64{"carol": 3})
	if err := b.Persist(path); err != nil {
		t.Fatal(err)
	}
	after := b.Users()
	if len(after) != len(before) {
		t.Fatalf("%d users after the restart, want %d", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("user %d: %+v before, %+v after", i, before[i], after[i])
		}
	}
	if f := after[len(after)-1]; f.Name != "bob" || f.Factor != 10 {
		t.Errorf("worst user %+v, want bob with the factor set at run time", f)
	}
	// The clock carries on from the saved charge: half an hour more of the
	// same usage moves priorities as if there had been no restart.
	a.Update(t0.Add(time.Hour), map[string]int{"alice": 4, "bob": 1, "carol": 1})
	b.Update(t0.Add(time.Hour), map[string]int{"alice": 4, "bob": 1, "carol": 1})
	if pa, pb := a.Priority("alice"), b.Priority("alice"); pa != pb {
		t.Errorf("alice %g without a restart, %g with one", pa, pb)
	}

	if err := b.ResetUsage("alice"); err != nil {
		t.Fatal(err)
	}
	c := NewAccountant(time.Hour, 1, nil)
	if err := c.Persist(path); err != nil {
		t.Fatal(err)
	}
	if p := c.Priority("alice"); p != minPriority {
		t.Errorf("alice after -resetusage and a restart: %g, want %g", p, minPriority)
	}
	if err := c.ResetUsage("nobody"); err == nil {
		t.Error("reset the usage of an unknown user")
	}
	if err := c.SetFactor("bob", 0); err == nil {
		t.Error("accepted a factor of 0")
	}
}

// A damaged file is refused with its name, and left for the administrator.
func TestAccountantRefusesADamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accountant.json")
	for _, content := range []string{`{"format": 1, "users": {"alice": {"real": `, `{"format": 7, "users": {}}`} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		err := NewAccountant(time.Hour, 1, nil).Persist(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Persist(%q) = %v, want an error naming the file", content, err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("the damaged file was changed to %q", b)
		}
	}
}

package matchmaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"harrier.dev/harrier/atomicfile"
)

// accountantFormat is the version of the file an Accountant keeps; a file
// of another version is refused rather than misread.
const accountantFormat = 1

// accountantState is what an Accountant keeps on disk: every user's
// priority and usage, the factors set at run time, and when it last
// charged usage, so that a restarted matchmaker orders users as before.
type accountantState struct {
	Format  int                     `json:"format"`
	Last    time.Time               `json:"last"`
	Factors map[string]float64      `json:"factors,omitempty"`
	Users   map[string]accountState `json:"users"`
}

type accountState struct {
	Real        float64       `json:"real"`
	InUse       int           `json:"in_use"`
	Accumulated time.Duration `json:"accumulated"`
	LastUsage   time.Time     `json:"last_usage,omitzero"`
}

// Persist makes the accountant durable in the file at path: it loads the
// state a previous matchmaker saved there, if any, and from then on Save
// writes it back. A file that cannot be read whole is an error that names
// it, and is left as it is.
func (a *Accountant) Persist(path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.path = path
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("accountant state: %w", err)
	}
	var st accountantState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("accountant state %s: %w", path, err)
	}
	if st.Format != accountantFormat {
		return fmt.Errorf("accountant state %s: format %d, want %d", path, st.Format, accountantFormat)
	}
	a.last = st.Last
	for user, f := range st.Factors {
		a.setFactors[user] = f
	}
	for user, u := range st.Users {
		a.users[user] = &account{real: u.Real, inUse: u.InUse, accumulated: u.Accumulated, lastUsage: u.LastUsage}
	}
	return nil
}

// Save writes the accountant's state to its file (see Persist), replacing
// the previous one only once the new one is whole on disk. An accountant
// without a file saves nothing.
func (a *Accountant) Save() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.saveLocked()
}

func (a *Accountant) saveLocked() error {
	if a.path == "" {
		return nil
	}
	st := accountantState{Format: accountantFormat, Last: a.last, Factors: a.setFactors, Users: map[string]accountState{}}
	for user, acc := range a.users {
		st.Users[user] = accountState{Real: acc.real, InUse: acc.inUse, Accumulated: acc.accumulated, LastUsage: acc.lastUsage}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("accountant state: %w", err)
	}
	if err := atomicfile.Write(a.path, b, 0o600); err != nil {
		return fmt.Errorf("accountant state: %w", err)
	}
	return nil
}

// SetFactor sets user's priority factor, as `harrier userprio -setfactor`
// does, over any from the configuration; it lasts across restarts.
func (a *Accountant) SetFactor(user string, f float64) error {
	if f <= 0 {
		return fmt.Errorf("priority factor %g: want a positive number", f)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setFactors[user] = f
	return a.saveLocked()
}

// ResetUsage forgets user's usage: its real priority returns to the best
// one and its accumulated usage to zero, as `harrier userprio -resetusage`.
func (a *Accountant) ResetUsage(user string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc := a.users[user]
	if acc == nil {
		return fmt.Errorf("reset usage: no user %q", user)
	}
	acc.real, acc.accumulated = minPriority, 0
	return a.saveLocked()
}

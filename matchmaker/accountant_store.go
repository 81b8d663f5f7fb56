package matchmaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"harrier.dev/harrier/atomicfile"
)

// AccountantState is what an Accountant keeps across restarts: every
// user's priority and usage, the factors set at run time, and when it last
// charged usage, so that a restarted matchmaker orders users as before.
type AccountantState struct {
	Last    time.Time
	Factors map[string]float64 // set at run time (SetFactor)
	Users   map[string]AccountState
}

// AccountState is one user's part of an AccountantState.
type AccountState struct {
	Real        float64 // real priority
	InUse       int     // slots held
	Accumulated time.Duration
	LastUsage   time.Time
	// Factor is the priority factor in force when the state was saved,
	// for those who read the store; an Accountant takes its factors from
	// its configuration and from AccountantState.Factors.
	Factor float64
}

// AccountantStore keeps an Accountant's state: a file ([Accountant.Persist])
// or a database (package accountdb).
type AccountantStore interface {
	// Load returns the state saved last; ok is false if none was.
	Load() (st AccountantState, ok bool, err error)
	// Save replaces the state saved with st, whole or not at all.
	Save(st AccountantState) error
}

// Persist makes the accountant durable in the file at path: it loads the
// state a previous matchmaker saved there, if any, and from then on Save
// writes it back. A file that cannot be read whole is an error that names
// it, and is left as it is.
func (a *Accountant) Persist(path string) error {
	return a.PersistIn(accountantFile(path))
}

// PersistIn makes the accountant durable in store: it loads the state
// saved there, if any, and from then on Save writes it back.
func (a *Accountant) PersistIn(store AccountantStore) error {
	st, ok, err := store.Load()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.store = store
	if !ok {
		return nil
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

// Save writes the accountant's state to its store (see PersistIn). An
// accountant without a store saves nothing.
func (a *Accountant) Save() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.saveLocked()
}

func (a *Accountant) saveLocked() error {
	if a.store == nil {
		return nil
	}
	st := AccountantState{Last: a.last, Factors: maps.Clone(a.setFactors), Users: map[string]AccountState{}}
	for user, acc := range a.users {
		st.Users[user] = AccountState{Real: acc.real, InUse: acc.inUse, Accumulated: acc.accumulated, LastUsage: acc.lastUsage, Factor: a.factor(user)}
	}
	return a.store.Save(st)
}

// accountantFile keeps an Accountant's state in a JSON file.
type accountantFile string

// accountantFormat is the version of the file; a file of another version
// is refused rather than misread.
const accountantFormat = 1

// The file's form.
type (
	accountantJSON struct {
		Format  int                    `json:"format"`
		Last    time.Time              `json:"last"`
		Factors map[string]float64     `json:"factors,omitempty"`
		Users   map[string]accountJSON `json:"users"`
	}
	accountJSON struct {
		Real        float64       `json:"real"`
		InUse       int           `json:"in_use"`
		Accumulated time.Duration `json:"accumulated"`
		LastUsage   time.Time     `json:"last_usage,omitzero"`
	}
)

func (f accountantFile) Load() (AccountantState, bool, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return AccountantState{}, false, nil
	}
	if err != nil {
		return AccountantState{}, false, fmt.Errorf("accountant state: %w", err)
	}
	var j accountantJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return AccountantState{}, false, fmt.Errorf("accountant state %s: %w", f, err)
	}
	if j.Format != accountantFormat {
		return AccountantState{}, false, fmt.Errorf("accountant state %s: format %d, want %d", f, j.Format, accountantFormat)
	}
	st := AccountantState{Last: j.Last, Factors: j.Factors, Users: map[string]AccountState{}}
	for user, u := range j.Users {
		st.Users[user] = AccountState{Real: u.Real, InUse: u.InUse, Accumulated: u.Accumulated, LastUsage: u.LastUsage}
	}
	return st, true, nil
}

// Save replaces the file only once the new one is whole on disk.
func (f accountantFile) Save(st AccountantState) error {
	j := accountantJSON{Format: accountantFormat, Last: st.Last, Factors: st.Factors, Users: map[string]accountJSON{}}
	for user, u := range st.Users {
		j.Users[user] = accountJSON{Real: u.Real, InUse: u.InUse, Accumulated: u.Accumulated, LastUsage: u.LastUsage}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("accountant state: %w", err)
	}
	if err := atomicfile.Write(string(f), b, 0o600); err != nil {
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

package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"harrier.dev/harrier/atomicfile"
)

// ErrNoToken is returned for a token id the registry does not have.
var ErrNoToken = errors.New("no token")

// ErrNotYours is returned for a token the caller may not revoke.
var ErrNotYours = errors.New("not the caller's token")

// A Record is what the registry keeps of an issued token: its claims, not
// the token itself, which only its holder has.
type Record struct {
	Claims
	Revoked time.Time `json:",omitzero"`
}

// Registry is the durable list of the tokens an agent issued and which of
// them were revoked. Every change is written (whole, atomically) before it
// is reported done, so a revocation outlives a crash; records of tokens
// expired for a day are dropped as changes are written.
type Registry struct {
	path string
	mu   sync.Mutex
	recs map[string]Record // by token id; guarded by mu
}

// OpenRegistry reads the registry in path (mode 0600), or starts an empty
// one if there is none.
func OpenRegistry(path string) (*Registry, error) {
	r := &Registry{path: path, recs: map[string]Record{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read token registry: %w", err)
	}
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("read token registry %s: %w", path, err)
	}
	for _, rec := range recs {
		r.recs[rec.ID] = rec
	}
	return r, nil
}

// ErrTooMany is returned by Add when the token's subject has as many live
// tokens as it may.
var ErrTooMany = errors.New("too many tokens")

// Add records a token about to be handed out, unless its subject already
// has max tokens neither expired nor revoked (max 0: no limit).
func (r *Registry) Add(c Claims, max int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.recs[c.ID]; ok {
		return fmt.Errorf("token id %s is in use", c.ID)
	}
	if max > 0 {
		live := 0
		for _, rec := range r.recs {
			if rec.Subject == c.Subject && rec.Revoked.IsZero() && rec.Expiry.After(c.IssuedAt) {
				live++
			}
		}
		if live >= max {
			return fmt.Errorf("%w: %s has %d live tokens, the most a user may have: revoke some (harrier token revoke)", ErrTooMany, c.Subject, live)
		}
	}
	r.recs[c.ID] = Record{Claims: c}
	if err := r.save(time.Now()); err != nil {
		delete(r.recs, c.ID)
		return err
	}
	return nil
}

// Check refuses a token that was revoked or that the registry never
// recorded (its signing key would have been used by another than the
// agent).
func (r *Registry) Check(c Claims) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.recs[c.ID]
	switch {
	case !ok:
		return fmt.Errorf("%w: token %s is not one this agent issued, or its record was dropped", ErrRevoked, c.ID)
	case !rec.Revoked.IsZero():
		return fmt.Errorf("%w at %s", ErrRevoked, rec.Revoked.UTC().Format(time.RFC3339))
	case rec.Subject != c.Subject:
		return fmt.Errorf("%w: token %s was issued to another user", ErrRevoked, c.ID)
	}
	return nil
}

// List returns the records of the tokens of subject (all if subject is
// empty), oldest first.
func (r *Registry) List(subject string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, rec := range r.recs {
		if subject == "" || rec.Subject == subject {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Revoke revokes the tokens that match: the token id if id is set, else
// every token of subject. may says whether the caller may revoke a token
// of the given subject. It returns the ids revoked (already revoked ones
// included).
func (r *Registry) Revoke(id, subject string, may func(subject string) bool, now time.Time) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, rec := range r.recs {
		if (id != "" && rec.ID == id) || (id == "" && rec.Subject == subject) {
			if !may(rec.Subject) {
				return nil, fmt.Errorf("%w: token %s is %s's: only they or the administrator may revoke it", ErrNotYours, rec.ID, rec.Subject)
			}
			ids = append(ids, rec.ID)
		}
	}
	if id != "" && len(ids) == 0 {
		return nil, fmt.Errorf("%w %s", ErrNoToken, id)
	}
	old := make(map[string]Record, len(ids))
	for _, i := range ids {
		rec := r.recs[i]
		old[i] = rec
		if rec.Revoked.IsZero() {
			rec.Revoked = now
			r.recs[i] = rec
		}
	}
	if err := r.save(now); err != nil {
		for i, rec := range old {
			r.recs[i] = rec
		}
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// save writes the registry, dropping tokens expired for a day: a token
// past its expiry is refused whatever its record says. Called with mu held.
func (r *Registry) save(now time.Time) error {
	recs := make([]Record, 0, len(r.recs))
	for id, rec := range r.recs {
		if now.Sub(rec.Expiry) > 24*time.Hour {
			delete(r.recs, id)
			continue
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b Record) int { return compareStrings(a.ID, b.ID) })
	data, err := json.Marshal(recs)
	if err != nil {
		return fmt.Errorf("write token registry: %w", err)
	}
	if err := atomicfile.Write(r.path, data, 0o600); err != nil {
		return fmt.Errorf("write token registry: %w", err)
	}
	return nil
}

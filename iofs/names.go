package iofs

import (
	"context"
	"sync"
	"time"
)

// names remembers the answers to phase one by logical name for
// Options.Timeout, as the kernel remembers names and attributes: a program
// that makes, syncs and removes the same temporary file over and over
// (sqlite's rollback journal) asks the shadow for its physical name once
// a second, not at every create and unlink. A changed mapping reaches the
// job within the timeout, as a changed file does.
type names struct {
	timeout time.Duration

	mu      sync.Mutex
	entries map[string]nameEntry
}

type nameEntry struct {
	phys Physical
	at   time.Time
}

// namesMax bounds the entries; past it the expired ones are dropped.
const namesMax = 4096

func newNames(timeout time.Duration) *names {
	return &names{timeout: timeout, entries: map[string]nameEntry{}}
}

// resolve returns the physical name of logical, asking c unless a fresh
// answer is at hand.
func (ns *names) resolve(ctx context.Context, c Client, logical string) (Physical, error) {
	now := time.Now()
	ns.mu.Lock()
	e, ok := ns.entries[logical]
	ns.mu.Unlock()
	if ok && now.Sub(e.at) < ns.timeout {
		return e.phys, nil
	}
	r, err := c.Resolve(ctx, logical, 0)
	if err != nil {
		return Physical{}, err
	}
	ns.remember(logical, r.Physical, now)
	return r.Physical, nil
}

// remember records an answer to phase one given at time at.
func (ns *names) remember(logical string, p Physical, at time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.entries) >= namesMax {
		for k, e := range ns.entries {
			if at.Sub(e.at) >= ns.timeout {
				delete(ns.entries, k)
			}
		}
		if len(ns.entries) >= namesMax {
			clear(ns.entries)
		}
	}
	ns.entries[logical] = nameEntry{phys: p, at: at}
}

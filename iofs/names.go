package iofs

import (
	"context"
	"strings"
	"sync"
	"time"
)

// names remembers the answers to phase one by logical name for
// Options.Timeout, as the kernel remembers names and attributes: a program
// that makes, syncs and removes the same temporary file over and over
// (sqlite's rollback journal) asks the shadow for its physical name once
// a second, not at every create and unlink. A changed mapping reaches the
// job within the timeout, as a changed file does.
//
// It also remembers the names the job removed through iofs, for a
// quarter of the timeout: a lookup of one then finds it absent without
// asking the shadow, as a lookup at the removal would have, which the
// kernel would remember for the timeout. The kernel itself forgets a
// name it saw removed, and sqlite looks for its rollback journal at
// every transaction, right after removing it at the end of the last.
// A name the job makes again through iofs is forgotten at once.
type names struct {
	timeout time.Duration

	mu      sync.Mutex
	entries map[string]nameEntry
	gone    map[string]time.Time
}

type nameEntry struct {
	phys Physical
	at   time.Time
}

// namesMax bounds the entries; past it the expired ones are dropped.
const namesMax = 4096

func newNames(timeout time.Duration) *names {
	return &names{timeout: timeout, entries: map[string]nameEntry{}, gone: map[string]time.Time{}}
}

// goneFor is how long a name the job removed is known absent.
func (ns *names) goneFor() time.Duration { return ns.timeout / 4 }

// removed records that the job removed logical with a request sent at
// time at.
func (ns *names) removed(logical string, at time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.gone) >= namesMax {
		for k, t := range ns.gone {
			if at.Sub(t) >= ns.goneFor() {
				delete(ns.gone, k)
			}
		}
		if len(ns.gone) >= namesMax {
			clear(ns.gone)
		}
	}
	ns.gone[logical] = at
}

// absent reports whether the job removed logical recently enough for it
// to be taken as absent still.
func (ns *names) absent(logical string) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	at, ok := ns.gone[logical]
	return ok && time.Since(at) < ns.goneFor()
}

// made forgets that logical, and anything below it, was removed: the
// job is about to make it (a directory renamed there brings its
// contents along).
func (ns *names) made(logical string) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.gone) == 0 {
		return
	}
	delete(ns.gone, logical)
	prefix := logical + "/"
	for k := range ns.gone {
		if strings.HasPrefix(k, prefix) {
			delete(ns.gone, k)
		}
	}
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

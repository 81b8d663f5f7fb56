package matchmaker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"harrier.dev/harrier/classad"
)

// Ad types the collector treats specially; all others are only stored.
const (
	TypeMachine    = "Machine"
	TypeJob        = "Job"
	TypeNegotiator = "Negotiator"
)

// Machine states, as HTCondor names them, that the matchmaker reads or writes.
const (
	StateUnclaimed = "Unclaimed"
	StateMatched   = "Matched"
)

// A Clock tells the time. The collector reads it to start and expire leases,
// so tests can move time without sleeping.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// A Collector stores the pool's ads. Every ad is kept under a lease and
// disappears when the lease runs out without a refresh. Ads are keyed by type
// (case-insensitive, as in HTCondor) and name; idle job ads are kept per
// agent, each agent's set replaced as a whole by its next advertisement.
//
// Stored ads are never modified in place: a change replaces the ad, so an
// ad handed out by a snapshot or query stays valid and unchanging.
// A Collector is safe for concurrent use.
type Collector struct {
	clock Clock

	mu     sync.Mutex
	ads    map[adKey]storedAd
	agents map[string]*jobSet // keyed by agent name
}

type adKey struct {
	typ  string // lower-case
	name string
}

type storedAd struct {
	ad      *classad.ClassAd
	expires time.Time
	// owner is the identity of the daemon that advertised the ad, or ""
	// for one stored in-process.
	owner string
}

// ErrNotOwner refuses a daemon's change to an ad another daemon
// advertised and keeps alive: an ad is its advertiser's until it
// invalidates it or lets its lease run out.
var ErrNotOwner = errors.New("the ad belongs to another daemon")

// checkOwner reports whether owner may replace or remove old, a live ad
// or job set of prevOwner.
func checkOwner(owner, prevOwner string) error {
	if prevOwner != "" && prevOwner != owner {
		return fmt.Errorf("%w (%s)", ErrNotOwner, prevOwner)
	}
	return nil
}

// jobSet is the idle-job advertisement of one agent: its resource
// requests, each less the jobs matched since.
type jobSet struct {
	reqs    []Request       // in advertised order
	seen    map[string]bool // every job id advertised
	expires time.Time
	owner   string // as in storedAd
}

// NewCollector returns an empty collector that reads the time from clock.
func NewCollector(clock Clock) *Collector {
	if clock == nil {
		clock = systemClock{}
	}
	return &Collector{clock: clock, ads: make(map[adKey]storedAd), agents: make(map[string]*jobSet)}
}

func keyOf(typ, name string) adKey { return adKey{strings.ToLower(typ), name} }

// Advertise stores ad under (typ, name) for lease, replacing any previous ad
// of that key; the caller must not modify ad afterwards. It reports whether
// the ad may allow a new match: a machine ad whose State is Unclaimed and
// that is new, or was not Unclaimed before, or whose Requirements or Rank
// changed. A refresh that changes only the machine's load or idle time does
// not count, or every startd's periodic update would run a cycle.
func (c *Collector) Advertise(typ, name string, ad *classad.ClassAd, lease time.Duration) bool {
	changed, _ := c.AdvertiseAs("", typ, name, ad, lease)
	return changed
}

// AdvertiseAs is Advertise on behalf of the daemon whose verified
// identity is owner. It fails with ErrNotOwner, storing nothing, if a
// live ad of the key belongs to another identity.
func (c *Collector) AdvertiseAs(owner, typ, name string, ad *classad.ClassAd, lease time.Duration) (bool, error) {
	now := c.clock.Now()
	k := keyOf(typ, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, existed := c.ads[k]
	if existed && !now.Before(old.expires) {
		existed = false
	}
	if existed {
		if err := checkOwner(owner, old.owner); err != nil {
			return false, err
		}
	}
	c.ads[k] = storedAd{ad: ad, expires: now.Add(lease), owner: owner}
	if k.typ != strings.ToLower(TypeMachine) || state(ad) != StateUnclaimed {
		return false, nil
	}
	return !existed || state(old.ad) != StateUnclaimed || changedPolicy(old.ad, ad), nil
}

// changedPolicy reports whether a machine's matching policy changed between
// two ads: its Requirements (the START expression) or its Rank.
func changedPolicy(old, ad *classad.ClassAd) bool {
	return exprText(old, "Requirements") != exprText(ad, "Requirements") ||
		exprText(old, "Rank") != exprText(ad, "Rank")
}

// AdvertiseJobs replaces the resource requests of agent, reachable at
// addr, with reqs, for lease. It reports whether they hold a job id the
// agent's previous advertisement did not: a job that a match dropped and
// that the agent advertises again before it hears of the match does not
// count as new.
func (c *Collector) AdvertiseJobs(agent, addr string, reqs []Request, lease time.Duration) bool {
	fresh, _ := c.AdvertiseJobsAs("", agent, addr, reqs, lease)
	return fresh
}

// AdvertiseJobsAs is AdvertiseJobs on behalf of the agent whose verified
// identity is owner; like AdvertiseAs, it refuses to replace another's.
func (c *Collector) AdvertiseJobsAs(owner, agent, addr string, reqs []Request, lease time.Duration) (bool, error) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var prev map[string]bool
	if old := c.agents[agent]; old != nil && now.Before(old.expires) {
		if err := checkOwner(owner, old.owner); err != nil {
			return false, err
		}
		prev = old.seen
	}
	set := &jobSet{reqs: make([]Request, len(reqs)), seen: make(map[string]bool, len(reqs)), expires: now.Add(lease), owner: owner}
	fresh := false
	for i, r := range reqs {
		r.Agent, r.AgentAddr = agent, addr
		set.reqs[i] = r
		for _, id := range r.JobIDs {
			set.seen[id] = true
			fresh = fresh || !prev[id]
		}
	}
	c.agents[agent] = set
	return fresh, nil
}

// Invalidate removes the ad (typ, name) and reports whether it was there.
// The type "Job" names an agent: its whole set of idle jobs is removed.
func (c *Collector) Invalidate(typ, name string) bool {
	gone, _ := c.InvalidateAs("", typ, name)
	return gone
}

// InvalidateAs is Invalidate on behalf of the daemon whose verified
// identity is owner: only a live ad's own advertiser may remove it.
func (c *Collector) InvalidateAs(owner, typ, name string) (bool, error) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.EqualFold(typ, TypeJob) {
		set, ok := c.agents[name]
		live := ok && now.Before(set.expires)
		if live && owner != "" {
			if err := checkOwner(owner, set.owner); err != nil {
				return false, err
			}
		}
		delete(c.agents, name)
		return live, nil
	}
	k := keyOf(typ, name)
	old, ok := c.ads[k]
	live := ok && now.Before(old.expires)
	if live && owner != "" {
		if err := checkOwner(owner, old.owner); err != nil {
			return false, err
		}
	}
	delete(c.ads, k)
	return live, nil
}

// Query returns the live ads of type typ for which constraint evaluates to
// true, ordered by name; the zero Expr selects them all. The type "Job"
// selects the resource request ads of every agent, ordered by agent and
// then as advertised.
func (c *Collector) Query(typ string, constraint classad.Expr) []*classad.ClassAd {
	c.Expire()
	var ads []*classad.ClassAd
	c.mu.Lock()
	if strings.EqualFold(typ, TypeJob) {
		for _, agent := range sortedKeys(c.agents) {
			for _, r := range c.agents[agent].reqs {
				if len(r.JobIDs) > 0 {
					ads = append(ads, r.Ad)
				}
			}
		}
	} else {
		k := strings.ToLower(typ)
		var keys []adKey
		for key := range c.ads {
			if key.typ == k {
				keys = append(keys, key)
			}
		}
		slices.SortFunc(keys, func(a, b adKey) int { return strings.Compare(a.name, b.name) })
		for _, key := range keys {
			ads = append(ads, c.ads[key].ad)
		}
	}
	c.mu.Unlock()
	// Evaluate outside the lock: stored ads are immutable.
	if constraint.IsZero() {
		return ads
	}
	return slices.DeleteFunc(ads, func(ad *classad.ClassAd) bool {
		return !ad.EvalExpr(constraint, nil).IsTrue()
	})
}

// Expire drops every ad and job set whose lease has run out. Reads ignore
// expired entries anyway; this releases their memory.
func (c *Collector) Expire() {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, a := range c.ads {
		if !now.Before(a.expires) {
			delete(c.ads, k)
		}
	}
	for name, set := range c.agents {
		if !now.Before(set.expires) {
			delete(c.agents, name)
		}
	}
}

// Snapshot returns the live resource requests that still want machines,
// ordered by agent and then as advertised, and the live machine ads,
// ordered by name: the input of one negotiation cycle.
func (c *Collector) Snapshot() ([]Request, []Machine) {
	c.Expire()
	c.mu.Lock()
	defer c.mu.Unlock()
	var reqs []Request
	for _, agent := range sortedKeys(c.agents) {
		for _, r := range c.agents[agent].reqs {
			if len(r.JobIDs) > 0 {
				reqs = append(reqs, r)
			}
		}
	}
	var machines []Machine
	mt := strings.ToLower(TypeMachine)
	for k, a := range c.ads {
		if k.typ == mt {
			machines = append(machines, Machine{Name: k.name, Ad: a.ad})
		}
	}
	slices.SortFunc(machines, func(a, b Machine) int { return strings.Compare(a.Name, b.Name) })
	return reqs, machines
}

// Claim records a match: the machine's ad, if it still says Unclaimed (a
// refresh may have replaced the matched one), or Claimed for a preempting
// match, is replaced by a copy with State = "Matched" (a partitionable
// slot's by a copy with the job's request taken away), and the job leaves
// its request, so that the next cycle offers neither again. The next
// advertisements of the startd and the agent bring the truth.
func (c *Collector) Claim(m Match) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(TypeMachine, m.Machine.Name)
	switch a, ok := c.ads[k]; {
	case ok && m.Preempts == nil && state(a.ad) == StateUnclaimed && isPartitionable(a.ad):
		// A partitionable slot stays Unclaimed with what the match
		// leaves, until its startd advertises the leftover itself.
		a.ad = consume(a.ad, m.Job.Ad)
		// The dynamic slot's claim holds the job's concurrency limits
		// once its startd advertises it; until then this ad does.
		if limits, ok := m.Job.Ad.EvalString(AttrConcurrencyLimits); ok && limits != "" {
			list, _ := a.ad.Eval(AttrPendingConcurrencyLimits).ListValue()
			a.ad.SetValue(AttrPendingConcurrencyLimits, classad.List(append(slices.Clip(list), classad.String(limits))...))
		}
		c.ads[k] = a
	case ok && (state(a.ad) == StateUnclaimed || m.Preempts != nil && state(a.ad) == StateClaimed):
		ad := a.ad.Copy()
		ad.SetString("State", StateMatched)
		// Its claim's concurrency limits are the new job's, as the
		// startd will publish them.
		ad.Delete(AttrConcurrencyLimits)
		if limits, ok := m.Job.Ad.EvalString(AttrConcurrencyLimits); ok && limits != "" {
			ad.SetString(AttrConcurrencyLimits, limits)
		}
		// And it is charged to the new job's accounting group, which
		// counts against the group's quota.
		ad.Delete(AttrAccountingGroup)
		if g, ok := m.Job.Ad.EvalString(AttrAccountingGroup); ok && g != "" {
			ad.SetString(AttrAccountingGroup, g)
		}
		a.ad = ad
		c.ads[k] = a
	}
	if set := c.agents[m.Job.Agent]; set != nil {
		for i, r := range set.reqs {
			if r.ID == m.Request && slices.Contains(r.JobIDs, m.Job.ID) {
				// Copy: a snapshot may still hold the old slice.
				set.reqs[i].JobIDs = slices.DeleteFunc(slices.Clone(r.JobIDs), func(id string) bool { return id == m.Job.ID })
			}
		}
	}
}

// Unclaim undoes the job half of [Collector.Claim] after the startd could
// not be told of the match: the job returns to its request unless the
// agent has advertised requests without it since. The machine stays
// Matched until its startd advertises again or its lease runs out, so an
// unreachable startd is not offered again and again.
func (c *Collector) Unclaim(m Match) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.agents[m.Job.Agent]
	if set == nil || !set.seen[m.Job.ID] {
		return
	}
	for _, r := range set.reqs {
		if slices.Contains(r.JobIDs, m.Job.ID) {
			return
		}
	}
	for i, r := range set.reqs {
		if r.ID == m.Request {
			set.reqs[i].JobIDs = append(slices.Clone(r.JobIDs), m.Job.ID)
			return
		}
	}
}

func state(ad *classad.ClassAd) string {
	s, _ := ad.EvalString("State")
	return s
}

func exprText(ad *classad.ClassAd, name string) string {
	e, ok := ad.Lookup(name)
	if !ok {
		return ""
	}
	return e.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

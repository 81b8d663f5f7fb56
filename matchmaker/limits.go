package matchmaker

import (
	"fmt"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/concurrency"
)

// Concurrency limits, as HTCondor's: a job's ConcurrencyLimits names the
// pool-wide resources it uses while it runs ("sw_license, db:2", names
// case-insensitive, a use of 1 unless a number follows the name), and
// the negotiator starts no job whose use would take a resource past its
// limit. The uses of running jobs are counted from the machine ads: a
// claimed slot publishes its job's ConcurrencyLimits while the claim
// lasts, and a match the startd has not answered yet counts from the
// ad the collector keeps for it (see Collector.Claim), so that a
// restarted matchmaker counts them again from the next advertisements.
const (
	// AttrConcurrencyLimits is the job attribute that names the limits
	// a job uses, and the slot attribute that names those its claim's
	// job holds.
	AttrConcurrencyLimits = "ConcurrencyLimits"
	// AttrPendingConcurrencyLimits lists, in the collector's copy of an
	// Unclaimed partitionable slot, the limits of the jobs matched to
	// it whose dynamic slots its startd has not advertised yet.
	AttrPendingConcurrencyLimits = "PendingConcurrencyLimits"
)

// Limits are the maximum uses of the pool's concurrency limits, from
// the configuration.
type Limits struct {
	// Max is the limit of each named resource (NAME_LIMIT), by lower-case
	// name.
	Max map[string]float64
	// SetDefault is the limit of a resource named SET.NAME that Max does
	// not name (CONCURRENCY_LIMIT_DEFAULT_SET), by lower-case set name.
	SetDefault map[string]float64
	// Default is the limit of a resource named nowhere else
	// (CONCURRENCY_LIMIT_DEFAULT); HasDefault false: no limit.
	Default    float64
	HasDefault bool
	// Groups are the accounting groups' quotas (see groups.go), by
	// lower-case group name.
	Groups map[string]GroupQuota
	// AcceptSurplus is GROUP_ACCEPT_SURPLUS: whether a group whose own
	// GROUP_ACCEPT_SURPLUS_<group> says nothing takes what others leave.
	AcceptSurplus bool
}

// limitOf is the maximum use of resource name (lower case); ok is false
// for a resource without a limit.
func (l *Limits) limitOf(name string) (max float64, ok bool) {
	if l == nil {
		return 0, false
	}
	if m, ok := l.Max[name]; ok {
		return m, true
	}
	if set, _, found := strings.Cut(name, "."); found {
		if m, ok := l.SetDefault[set]; ok {
			return m, true
		}
	}
	return l.Default, l.HasDefault
}

// LimitsFromConfig reads the limits from the configuration's keys and
// values (lookup gives a key's value): every NAME_LIMIT, and
// CONCURRENCY_LIMIT_DEFAULT and CONCURRENCY_LIMIT_DEFAULT_SET. skip are
// keys that end in _LIMIT and mean something else.
func LimitsFromConfig(keys []string, lookup func(string) string, skip map[string]bool) (*Limits, error) {
	l := &Limits{Max: map[string]float64{}, SetDefault: map[string]float64{}, Groups: map[string]GroupQuota{}}
	boolean := func(key string) (bool, error) {
		v := strings.TrimSpace(lookup(key))
		switch strings.ToLower(v) {
		case "true", "yes", "1":
			return true, nil
		case "false", "no", "0":
			return false, nil
		}
		return false, fmt.Errorf("%s = %q: want true or false", key, v)
	}
	number := func(key string) (float64, error) {
		v := strings.TrimSpace(lookup(key))
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 {
			return 0, fmt.Errorf("%s = %q: want a number, 0 or more", key, v)
		}
		return x, nil
	}
	surplus := map[string]bool{}
	for _, key := range keys {
		upper := strings.ToUpper(key)
		var err error
		switch {
		case strings.HasPrefix(upper, "GROUP_QUOTA_DYNAMIC_"):
			g := strings.ToLower(strings.TrimPrefix(upper, "GROUP_QUOTA_DYNAMIC_"))
			q := l.Groups[g]
			if q.Share, err = number(key); err == nil && q.Share > 1 {
				err = fmt.Errorf("%s = %q: a dynamic group quota is a share of the pool, 0 to 1", key, lookup(key))
			}
			q.Dynamic = true
			l.Groups[g] = q
		case strings.HasPrefix(upper, "GROUP_QUOTA_"):
			g := strings.ToLower(strings.TrimPrefix(upper, "GROUP_QUOTA_"))
			q := l.Groups[g]
			q.CPUs, err = number(key)
			l.Groups[g] = q
		case upper == "GROUP_ACCEPT_SURPLUS":
			l.AcceptSurplus, err = boolean(key)
		case strings.HasPrefix(upper, "GROUP_ACCEPT_SURPLUS_"):
			surplus[strings.ToLower(strings.TrimPrefix(upper, "GROUP_ACCEPT_SURPLUS_"))], err = boolean(key)
		case upper == "CONCURRENCY_LIMIT_DEFAULT":
			l.Default, err = number(key)
			l.HasDefault = true
		case strings.HasPrefix(upper, "CONCURRENCY_LIMIT_DEFAULT_"):
			set := strings.ToLower(strings.TrimPrefix(upper, "CONCURRENCY_LIMIT_DEFAULT_"))
			l.SetDefault[set], err = number(key)
		case strings.HasSuffix(upper, "_LIMIT") && len(upper) > len("_LIMIT") && !skip[upper]:
			l.Max[strings.ToLower(strings.TrimSuffix(upper, "_LIMIT"))], err = number(key)
		}
		if err != nil {
			return nil, err
		}
	}
	for g, q := range l.Groups {
		q.AcceptSurplus = l.AcceptSurplus
		if s, ok := surplus[g]; ok {
			q.AcceptSurplus = s
		}
		l.Groups[g] = q
	}
	return l, nil
}

// empty reports whether no limit is set.
func (l *Limits) empty() bool {
	return l == nil || len(l.Max) == 0 && len(l.SetDefault) == 0 && !l.HasDefault && len(l.Groups) == 0
}

// limitsOf reads the concurrency limits attribute attr of ad; a value
// that does not parse counts as none.
func limitsOf(ad *classad.ClassAd, attr string) []concurrency.Use {
	s, ok := ad.EvalString(attr)
	if !ok || s == "" {
		return nil
	}
	uses, _ := concurrency.Parse(s)
	return uses
}

// limitCounter counts the uses of the limits in a negotiation, and the
// CPUs of the groups with quotas.
type limitCounter struct {
	limits *Limits
	used   map[string]float64
	// quota and groupUsed are the CPUs of each group with a quota, by
	// lower-case group; surplus is set for the pass in which the groups
	// that accept surplus may go beyond their quotas.
	quota, groupUsed map[string]float64
	surplus          bool
}

// charge is what one more job of a request takes: uses of concurrency
// limits, and CPUs of its group's quota (group "" for none).
type charge struct {
	uses  []concurrency.Use
	group string
	cpus  float64
}

// newLimitCounter counts the uses the machine ads show: the limits held
// by the claims of slots that are not Unclaimed (a Matched slot's ad is
// the collector's, with its match's job's limits), and those of an
// Unclaimed partitionable slot's matches not yet advertised; and the
// CPUs of the groups' claims, against quotas of the pool's CPUs.
func newLimitCounter(limits *Limits, machines []Machine) *limitCounter {
	c := &limitCounter{limits: limits, used: map[string]float64{}}
	if len(limits.Groups) > 0 {
		var pool float64
		c.groupUsed = map[string]float64{}
		for _, m := range machines {
			cpus := cpusOf(m.Ad, "Cpus")
			pool += cpus
			if state(m.Ad) != StateUnclaimed {
				if g := groupOf(m.Ad); g != "" {
					c.groupUsed[g] += cpus
				}
			}
		}
		c.quota = map[string]float64{}
		for g, q := range limits.Groups {
			c.quota[g] = q.quota(pool)
		}
	}
	for _, m := range machines {
		if state(m.Ad) != StateUnclaimed {
			c.add(charge{uses: limitsOf(m.Ad, AttrConcurrencyLimits)})
		}
		if v := m.Ad.Eval(AttrPendingConcurrencyLimits); !v.IsUndefined() {
			list, _ := v.ListValue()
			for _, e := range list {
				if s, ok := e.StringValue(); ok {
					uses, _ := concurrency.Parse(s)
					c.add(charge{uses: uses})
				}
			}
		}
	}
	return c
}

// allows reports whether one more job charged ch fits every limit, and
// its group's quota (beyond it, in the surplus pass, for a group that
// accepts surplus).
func (c *limitCounter) allows(ch charge) bool {
	for _, u := range ch.uses {
		if max, ok := c.limits.limitOf(u.Name); ok && c.used[u.Name]+u.Use > max+1e-9 {
			return false
		}
	}
	if q, ok := c.quota[ch.group]; ok && c.groupUsed[ch.group]+ch.cpus > q+1e-9 {
		return c.surplus && c.limits.Groups[ch.group].AcceptSurplus
	}
	return true
}

// add counts ch; a nil counter counts nothing.
func (c *limitCounter) add(ch charge) {
	if c == nil {
		return
	}
	for _, u := range ch.uses {
		c.used[u.Name] += u.Use
	}
	if _, ok := c.quota[ch.group]; ok {
		c.groupUsed[ch.group] += ch.cpus
	}
}

// LimitAttr is the attribute of the negotiator's ad that gives the use of
// limit name: ConcurrencyLimit_NAME, as HTCondor's (a dot in the name
// becomes an underscore).
func LimitAttr(name string) string { return "ConcurrencyLimit_" + attrSafe(name) }

// The limits are published in the negotiator's ad beside their uses, so
// that a user's analysis of a waiting job can say which limit holds it:
// ConcurrencyLimitMax_NAME for each NAME_LIMIT, ConcurrencyLimitDefault
// and ConcurrencyLimitDefault_SET.
const (
	attrLimitMax     = "ConcurrencyLimitMax_"
	attrLimitDefault = "ConcurrencyLimitDefault"
)

// publish puts the limits into the negotiator's ad ad.
func (l *Limits) publish(ad *classad.ClassAd) {
	if l == nil {
		return
	}
	for name, max := range l.Max {
		ad.SetReal(attrLimitMax+attrSafe(name), max)
	}
	for set, max := range l.SetDefault {
		ad.SetReal(attrLimitDefault+"_"+attrSafe(set), max)
	}
	if l.HasDefault {
		ad.SetReal(attrLimitDefault, l.Default)
	}
}

// attrSafe is name as part of an attribute's name: a dot becomes an
// underscore, as in HTCondor's ConcurrencyLimit_NAME.
func attrSafe(name string) string { return strings.ReplaceAll(name, ".", "_") }

// LimitState is one of a job's concurrency limits as the negotiator last
// counted it.
type LimitState struct {
	Name     string
	Use      float64 // the job's
	InUse    float64 // by running and matched jobs
	Max      float64
	HasLimit bool
}

// Full reports whether the job's use does not fit beside those counted.
func (s LimitState) Full() bool { return s.HasLimit && s.InUse+s.Use > s.Max+1e-9 }

// JobLimits gives the state of each concurrency limit job names, from
// the negotiator's ad negotiator (nil: no limit is known).
func JobLimits(job, negotiator *classad.ClassAd) []LimitState {
	uses := limitsOf(job, AttrConcurrencyLimits)
	if len(uses) == 0 {
		return nil
	}
	lookup := func(attr string) (float64, bool) {
		if negotiator == nil {
			return 0, false
		}
		return negotiator.EvalReal(attr)
	}
	out := make([]LimitState, len(uses))
	for i, u := range uses {
		s := LimitState{Name: u.Name, Use: u.Use}
		s.InUse, _ = lookup(LimitAttr(u.Name))
		if m, ok := lookup(attrLimitMax + attrSafe(u.Name)); ok {
			s.Max, s.HasLimit = m, true
		} else if set, _, found := strings.Cut(u.Name, "."); found {
			s.Max, s.HasLimit = lookup(attrLimitDefault + "_" + attrSafe(set))
		}
		if !s.HasLimit {
			s.Max, s.HasLimit = lookup(attrLimitDefault)
		}
		out[i] = s
	}
	return out
}

// anySurplus reports whether a group with a quota accepts surplus.
func (c *limitCounter) anySurplus() bool {
	for g := range c.quota {
		if c.limits.Groups[g].AcceptSurplus {
			return true
		}
	}
	return false
}

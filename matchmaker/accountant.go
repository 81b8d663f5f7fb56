package matchmaker

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"harrier.dev/harrier/classad"
)

// Accountant defaults, as HTCondor's.
const (
	// DefaultHalfLife is PRIORITY_HALFLIFE: a day.
	DefaultHalfLife = 24 * time.Hour
	// minPriority is the best real priority a user can have (HTCondor's
	// 0.5): a user who has used nothing for a long time.
	minPriority = 0.5
	// TypeAccounting is the type of the ads that publish user priorities.
	TypeAccounting = "Accounting"
)

// An Accountant keeps the pool's user priorities for fair share. A user's
// real priority moves toward the number of slots the user holds, with a
// configurable half-life: a user who holds 10 slots for one half-life from
// 0.5 reaches about 5.25. The effective priority, which orders and sizes
// shares, is the real priority times the user's priority factor; smaller
// is better. An Accountant is safe for concurrent use. Its state lives in
// memory, and in a file or a database once it is told to Persist.
type Accountant struct {
	halfLife      time.Duration
	defaultFactor float64
	factors       map[string]float64 // from the configuration

	mu sync.Mutex
	// setFactors are factors set at run time (SetFactor), over factors.
	setFactors map[string]float64
	users      map[string]*account
	last       time.Time
	store      AccountantStore // where Save writes; nil for nowhere
}

type account struct {
	real        float64
	inUse       int
	accumulated time.Duration // slot time used
	lastUsage   time.Time
}

// NewAccountant returns an accountant that decays priorities with
// halfLife (DefaultHalfLife if zero) and multiplies them by factors[user],
// or by defaultFactor (1 if zero) for users not listed.
func NewAccountant(halfLife time.Duration, defaultFactor float64, factors map[string]float64) *Accountant {
	if halfLife <= 0 {
		halfLife = DefaultHalfLife
	}
	if defaultFactor <= 0 {
		defaultFactor = 1
	}
	return &Accountant{halfLife: halfLife, defaultFactor: defaultFactor, factors: factors,
		setFactors: map[string]float64{}, users: map[string]*account{}}
}

// Update decays every real priority toward the number of slots its user
// held since the previous update, over the time since then, and records
// that from now each user holds usage[user] slots. The first update only
// starts the clock.
func (a *Accountant) Update(now time.Time, usage map[string]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for user := range usage {
		if a.users[user] == nil {
			a.users[user] = &account{real: minPriority}
		}
	}
	var dt time.Duration
	if !a.last.IsZero() && now.After(a.last) {
		dt = now.Sub(a.last)
	}
	a.last = now
	beta := math.Pow(0.5, dt.Seconds()/a.halfLife.Seconds())
	for user, acc := range a.users {
		// What the user held since the last update is what it used.
		acc.accumulated += time.Duration(acc.inUse) * dt
		acc.real = max(beta*acc.real+(1-beta)*float64(acc.inUse), minPriority)
		acc.inUse = usage[user]
		if acc.inUse > 0 {
			acc.lastUsage = now
		}
	}
}

// Priority returns user's effective priority.
func (a *Accountant) Priority(user string) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	real := minPriority
	if acc := a.users[user]; acc != nil {
		real = acc.real
	}
	return real * a.factor(user)
}

func (a *Accountant) factor(user string) float64 {
	if f, ok := a.setFactors[user]; ok {
		return f
	}
	if f, ok := a.factors[user]; ok && f > 0 {
		return f
	}
	if strings.HasPrefix(user, NiceUserPrefix) {
		return NiceUserFactor
	}
	return a.defaultFactor
}

// A nice user's jobs (nice_user = true) are charged to NiceUserPrefix +
// owner, whose priority factor is NiceUserFactor, as HTCondor's
// NICE_USER_PRIO_FACTOR: they get what every other user leaves. The
// administrator may set another factor for one (SetFactor).
const (
	NiceUserPrefix = "nice-user."
	NiceUserFactor = 1e10
)

// A UserPriority is one user's record, as `harrier userprio` shows it.
type UserPriority struct {
	Name             string
	Priority         float64 // effective: real times factor
	RealPriority     float64
	Factor           float64
	ResourcesUsed    int
	AccumulatedUsage time.Duration
	LastUsage        time.Time
}

// Users returns every user's record, best priority first.
func (a *Accountant) Users() []UserPriority {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]UserPriority, 0, len(a.users))
	for name, acc := range a.users {
		f := a.factor(name)
		out = append(out, UserPriority{Name: name, Priority: acc.real * f, RealPriority: acc.real, Factor: f,
			ResourcesUsed: acc.inUse, AccumulatedUsage: acc.accumulated, LastUsage: acc.lastUsage})
	}
	slices.SortFunc(out, func(x, y UserPriority) int {
		if x.Priority != y.Priority {
			if x.Priority < y.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// Ad returns the Accounting ad that publishes u, with HTCondor's names.
func (u UserPriority) Ad() *classad.ClassAd {
	ad := classad.New()
	ad.SetString("MyType", TypeAccounting)
	ad.SetString("Name", u.Name)
	ad.SetReal("Priority", u.Priority)
	ad.SetReal("RealPriority", u.RealPriority)
	ad.SetReal("PriorityFactor", u.Factor)
	ad.SetInt("ResourcesUsed", int64(u.ResourcesUsed))
	ad.SetReal("AccumulatedUsage", u.AccumulatedUsage.Seconds())
	if !u.LastUsage.IsZero() {
		ad.SetInt("LastUsageTime", u.LastUsage.Unix())
	}
	return ad
}

// usageOf counts the claimed slots of each user they are charged to (see
// chargedTo). A dynamic slot
// counts its CPUs, as the negotiator's fair share weighs what it carves
// out of a partitionable slot.
func usageOf(machines []Machine) map[string]int {
	usage := map[string]int{}
	for _, m := range machines {
		if state(m.Ad) != StateClaimed {
			continue
		}
		if owner := chargedTo(m.Ad, "RemoteOwner"); owner != "" {
			weight := 1
			if dyn, _ := m.Ad.EvalBool("DynamicSlot"); dyn {
				if cpus, ok := m.Ad.EvalInt("Cpus"); ok && cpus > 1 {
					weight = int(cpus)
				}
			}
			usage[owner] += weight
		}
	}
	return usage
}

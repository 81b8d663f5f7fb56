package matchmaker

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"harrier.dev/harrier/classad"
)

// Licenses are ads of type License that the matchmaker reads from its
// LICENSE_FILE and offers to gangs: a job whose Ports ask for a machine
// and a license valid on it gets both or neither. A license has Seats
// interchangeable seats (1 if not given), each held by one running job.
//
// The matchmaker keeps no record of its own of which seats are held:
// the startd of a gang's first machine publishes the licenses its claim
// holds (AttrGangLicenses) for as long as the claim lasts, so the seats
// in use are counted from the machine ads, and a restarted matchmaker
// learns them again from the startds' next advertisements. Seats handed
// out in a cycle count as pending until the machine's startd advertises
// again (the claim, or its refusal), and a restarted matchmaker offers no
// seat until every startd has had an advertisement interval to speak.
const (
	TypeLicense = "License"
	// AttrSeats is a license's number of seats.
	AttrSeats = "Seats"
	// AttrSeatsInUse is published in the License ads the matchmaker
	// advertises: the seats held by claims or pending.
	AttrSeatsInUse = "SeatsInUse"
	// AttrGangLicenses lists the licenses a gang holds, in the job ad the
	// gang's first machine is claimed with and, while the claim lasts, in
	// that machine's ad.
	AttrGangLicenses = "GangLicenses"
)

// ReadLicenseFile reads license ads: ClassAds in new syntax, one after
// another ("[ Name = "sim_app"; Seats = 2; Ports = { ... } ]"), with //
// comments between them. Each needs a distinct Name; Type is set to
// License.
func ReadLicenseFile(path string) ([]*classad.ClassAd, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("license file: %w", err)
	}
	texts, err := splitAds(string(b))
	if err != nil {
		return nil, fmt.Errorf("license file %s: %w", path, err)
	}
	seen := map[string]bool{}
	var ads []*classad.ClassAd
	for i, text := range texts {
		ad, err := classad.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("license file %s: ad %d: %w", path, i+1, err)
		}
		name, ok := ad.EvalString("Name")
		if !ok || name == "" {
			return nil, fmt.Errorf("license file %s: ad %d has no Name", path, i+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("license file %s: license %q is given twice", path, name)
		}
		seen[name] = true
		if n, ok := seatsOf(ad); !ok || n < 0 {
			return nil, fmt.Errorf("license file %s: license %q: Seats is not a number of seats", path, name)
		}
		ad.SetString("MyType", TypeLicense)
		ad.SetString("Type", TypeLicense)
		ads = append(ads, ad)
	}
	return ads, nil
}

// splitAds cuts text into the texts of its top-level [ ... ] ads.
func splitAds(text string) ([]string, error) {
	var ads []string
	depth, start := 0, 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case c == '/' && depth == 0 && i+1 < len(text) && text[i+1] == '/':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '[':
			if depth == 0 {
				start = i
			}
			depth++
		case c == ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ] at byte %d", i)
			}
			if depth == 0 {
				ads = append(ads, text[start:i+1])
			}
		case depth == 0 && c != ' ' && c != '\t' && c != '\n' && c != '\r':
			return nil, fmt.Errorf("text outside an ad at byte %d", i)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unterminated ad")
	}
	return ads, nil
}

func seatsOf(ad *classad.ClassAd) (int64, bool) {
	if _, ok := ad.Lookup(AttrSeats); !ok {
		return 1, true
	}
	return ad.EvalInt(AttrSeats)
}

// licensePool tracks the seats of the configured licenses; a nil pool
// has none. It is safe for concurrent use: the cycle offers seats while notifications that
// failed give theirs back.
type licensePool struct {
	defs []*classad.ClassAd
	// holdUntil is when seats may first be offered: a restarted
	// matchmaker waits for the startds to tell it which seats are held.
	holdUntil time.Time

	mu sync.Mutex
	// pending are the seats handed to gangs and not yet seen in a
	// machine ad, by the name of the gang's first machine.
	pending map[string]pendingSeats
}

// pendingSeats are the seats of one gang: stored is the Matched ad the
// collector holds for its first machine, until the startd replaces it.
type pendingSeats struct {
	stored   *classad.ClassAd
	licenses []string
}

func newLicensePool(defs []*classad.ClassAd, holdUntil time.Time) *licensePool {
	return &licensePool{defs: defs, holdUntil: holdUntil, pending: map[string]pendingSeats{}}
}

// inUse counts the seats of each license held by the claims the machine
// ads show, and those pending. A pending gang whose machine's startd has
// advertised since is no longer pending: its claim shows in the ad, or
// it was refused.
func (p *licensePool) inUse(machines []Machine) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	used := map[string]int{}
	for _, m := range machines {
		if pend, ok := p.pending[m.Name]; ok && pend.stored != m.Ad && state(m.Ad) != StateMatched {
			delete(p.pending, m.Name)
		}
		if state(m.Ad) == StateUnclaimed {
			continue
		}
		for _, l := range heldLicenses(m.Ad) {
			used[l]++
		}
	}
	for _, pend := range p.pending {
		for _, l := range pend.licenses {
			used[l]++
		}
	}
	return used
}

// heldLicenses returns the licenses an ad says its claim holds.
func heldLicenses(ad *classad.ClassAd) []string {
	v := ad.Eval(AttrGangLicenses)
	list, _ := v.ListValue()
	var names []string
	for _, e := range list {
		if s, ok := e.StringValue(); ok {
			names = append(names, s)
		}
	}
	return names
}

// offers returns an ad per free seat, to be gangmatched, and the seats
// of each license in use.
func (p *licensePool) offers(machines []Machine, now time.Time) (seats []*classad.ClassAd, used map[string]int) {
	if p == nil || len(p.defs) == 0 {
		return nil, nil
	}
	used = p.inUse(machines)
	if now.Before(p.holdUntil) {
		return nil, used
	}
	for _, def := range p.defs {
		total, _ := seatsOf(def)
		// A seat each, distinct ads: a gang takes one seat, not all.
		for range max(total-int64(used[licenseName(def)]), 0) {
			seats = append(seats, def.Copy())
		}
	}
	return seats, used
}

// ads returns the license ads as the collector shows them, with the
// seats in use.
func (p *licensePool) ads(used map[string]int) []*classad.ClassAd {
	if p == nil {
		return nil
	}
	ads := make([]*classad.ClassAd, len(p.defs))
	for i, def := range p.defs {
		ads[i] = def.Copy()
		ads[i].SetInt(AttrSeatsInUse, int64(used[licenseName(def)]))
	}
	return ads
}

// hold records the seats a gang took, pending until the startd of its
// first machine advertises; stored is that machine's Matched ad in the
// collector.
func (p *licensePool) hold(machine string, stored *classad.ClassAd, licenses []string) {
	if p == nil || len(licenses) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[machine] = pendingSeats{stored: stored, licenses: slices.Clone(licenses)}
}

// release gives back the seats of a gang whose startds were not told.
func (p *licensePool) release(machine string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, machine)
}

// licenseName returns the Name of a license ad.
func licenseName(ad *classad.ClassAd) string {
	n, _ := ad.EvalString("Name")
	return n
}

// isLicense reports whether ad is a license's.
func isLicense(ad *classad.ClassAd) bool {
	t, _ := ad.EvalString("Type")
	return strings.EqualFold(t, TypeLicense)
}

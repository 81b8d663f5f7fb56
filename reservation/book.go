package reservation

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Reservation is a granted request: Nodes (machine names) are the
// Owner's from Start to End.
type Reservation struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Nodes   []string  `json:"nodes"`
	Created time.Time `json:"created"`
}

// Active reports whether now is inside r's window.
func (r Reservation) Active(now time.Time) bool { return !now.Before(r.Start) && now.Before(r.End) }

// overlaps reports whether r's window and [from, to) share a moment.
func (r Reservation) overlaps(from, to time.Time) bool {
	return r.Start.Before(to) && from.Before(r.End)
}

// HoldTimeout is how long a prepared reservation holds its machines
// without a commit.
const HoldTimeout = time.Minute

// HistoryKept is how long a reservation stays in the book after its
// window ends, for plus_rsvutil (the paper's Figure 7 looks back 7 days).
const HistoryKept = 30 * 24 * time.Hour

// Errors of the book that callers tell apart.
var (
	ErrNotFound = errors.New("no such reservation")
	ErrNotOwner = errors.New("the reservation is another user's")
	ErrNoHold   = errors.New("the prepared reservation is no longer held")
)

// A Book is the pool's reservations. It keeps them in a file, if it has
// one, replaced whole and atomically at each change, so that a restarted
// matchmaker has them all. A Book is safe for concurrent use.
type Book struct {
	path string // "" keeps the book in memory
	now  func() time.Time

	// deciding is held by Prepare while it decides, so that decisions
	// see each other's holds: no machine is given twice.
	deciding sync.Mutex

	// mu guards the fields below.
	mu    sync.Mutex
	next  int64 // the number of the next reservation id
	rsvs  []Reservation
	holds map[*Hold]bool
}

// A Hold is a prepared reservation: its machines are held until it is
// committed or aborted, or HoldTimeout passes.
type Hold struct {
	r       Reservation
	expires time.Time
}

// Reservation returns what the hold would commit (its ID is given at
// commit).
func (h *Hold) Reservation() Reservation { return h.r }

// Open returns the book kept in the file at path (made at the first
// change if missing); "" keeps it in memory. now tells the time (nil: the
// system clock). A file that cannot be read whole is an error naming it,
// and is left as it is.
func Open(path string, now func() time.Time) (*Book, error) {
	if now == nil {
		now = time.Now
	}
	b := &Book{path: path, now: now, next: 1, holds: map[*Hold]bool{}}
	if path == "" {
		return b, nil
	}
	st, err := load(path)
	if err != nil {
		return nil, err
	}
	b.next = max(st.Next, 1)
	b.rsvs = st.Reservations
	return b, nil
}

// Prepare is the first phase of a reservation: it decides req with pol
// (nil: every free machine is reservable) over the pool's nodes, and holds
// the machines it grants. A refusal is a *RefusedError.
func (b *Book) Prepare(req Request, nodes []Node, pol *Policy) (*Hold, error) {
	now := b.now()
	if err := req.check(now); err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	b.deciding.Lock()
	defer b.deciding.Unlock()

	b.mu.Lock()
	busy := map[string]bool{}
	var history []Reservation
	for h := range b.holds {
		if !now.Before(h.expires) {
			delete(b.holds, h)
			continue
		}
		history = append(history, h.r)
	}
	history = append(history, b.rsvs...)
	for _, r := range history {
		if r.overlaps(req.Start, req.End) {
			for _, n := range r.Nodes {
				busy[n] = true
			}
		}
	}
	b.mu.Unlock()

	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	var candidates []int
	for i, n := range sorted {
		if !busy[n.Name] {
			candidates = append(candidates, i)
		}
	}
	names, err := pol.decide(req, sorted, candidates, history)
	if err != nil {
		return nil, err
	}
	h := &Hold{
		r:       Reservation{Owner: req.Owner, Start: req.Start, End: req.End, Nodes: names},
		expires: now.Add(HoldTimeout),
	}
	b.mu.Lock()
	b.holds[h] = true
	b.mu.Unlock()
	return h, nil
}

// Commit is the second phase: it gives the held reservation an id and
// keeps it, durably before it returns. After an error the hold is gone.
func (b *Book) Commit(h *Hold) (Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.holds[h] {
		return Reservation{}, ErrNoHold
	}
	delete(b.holds, h)
	if !b.now().Before(h.expires) {
		return Reservation{}, ErrNoHold
	}
	r := h.r
	r.ID = "rsv" + strconv.FormatInt(b.next, 10)
	r.Created = b.now()
	rsvs := append(slices.Clone(b.rsvs), r)
	if err := b.saveLocked(b.next+1, rsvs); err != nil {
		return Reservation{}, err
	}
	b.next++
	b.rsvs = rsvs
	return r, nil
}

// Abort gives a hold's machines back.
func (b *Book) Abort(h *Hold) {
	b.mu.Lock()
	delete(b.holds, h)
	b.mu.Unlock()
}

// Reserve prepares and commits req.
func (b *Book) Reserve(req Request, nodes []Node, pol *Policy) (Reservation, error) {
	h, err := b.Prepare(req, nodes, pol)
	if err != nil {
		return Reservation{}, err
	}
	return b.Commit(h)
}

// Cancel removes the reservation id. Only its owner may, unless admin.
func (b *Book) Cancel(id, user string, admin bool) (Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.rsvs, func(r Reservation) bool { return r.ID == id })
	if i < 0 || !b.now().Before(b.rsvs[i].End) {
		return Reservation{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	r := b.rsvs[i]
	if !admin && r.Owner != user {
		return Reservation{}, fmt.Errorf("%w: %s is %s's", ErrNotOwner, id, r.Owner)
	}
	rsvs := slices.Delete(slices.Clone(b.rsvs), i, i+1)
	if err := b.saveLocked(b.next, rsvs); err != nil {
		return Reservation{}, err
	}
	b.rsvs = rsvs
	return r, nil
}

// Current returns the reservations whose windows have not ended, by
// start time (then id). The caller must not modify them.
func (b *Book) Current() []Reservation {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Reservation
	for _, r := range b.rsvs {
		if now.Before(r.End) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Reservation) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// saveLocked writes next and rsvs, less those that ended more than
// HistoryKept ago, to the book's file. b.mu must be held.
func (b *Book) saveLocked(next int64, rsvs []Reservation) error {
	if b.path == "" {
		return nil
	}
	cutoff := b.now().Add(-HistoryKept)
	kept := slices.DeleteFunc(slices.Clone(rsvs), func(r Reservation) bool { return r.End.Before(cutoff) })
	return save(b.path, state{Format: format, Next: next, Reservations: kept})
}

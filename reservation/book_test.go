package reservation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Requests for overlapping windows, decided concurrently, never get the
// same machine: every pair of granted reservations whose windows overlap
// has disjoint machines, and what was granted adds up.
func TestNoDoubleBooking(t *testing.T) {
	b, err := Open(filepath.Join(t.TempDir(), "reservations.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := idleNodes(20)
	base := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []Reservation
	refused := 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Windows of 1 to 3 hours starting within 2 hours: most overlap.
			start := base.Add(time.Duration(i%5) * 30 * time.Minute)
			req := Request{Owner: fmt.Sprintf("u%d", i%4), Start: start, End: start.Add(time.Duration(1+i%3) * time.Hour), Nodes: 1 + i%4}
			r, err := b.Reserve(req, nodes, nil)
			mu.Lock()
			defer mu.Unlock()
			var ref *RefusedError
			switch {
			case errors.As(err, &ref):
				refused++
			case err != nil:
				t.Error(err)
			default:
				granted = append(granted, r)
			}
		}()
	}
	wg.Wait()
	if len(granted) == 0 || refused == 0 {
		t.Fatalf("%d granted, %d refused: the test wants both", len(granted), refused)
	}
	for i, a := range granted {
		for _, c := range granted[i+1:] {
			if !a.overlaps(c.Start, c.End) {
				continue
			}
			for _, n := range a.Nodes {
				for _, m := range c.Nodes {
					if n == m {
						t.Errorf("%s booked by %s and %s in overlapping windows", n, a.ID, c.ID)
					}
				}
			}
		}
	}
}

// The book survives a restart: a reopened file has every reservation,
// and ids go on from where they were; cancellation is kept too.
func TestBookDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reservations.json")
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	r1, err := b.Reserve(Request{Owner: "ann", Start: start, End: start.Add(time.Hour), Nodes: 2}, idleNodes(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Reserve(Request{Owner: "bob", Start: start, End: start.Add(time.Hour), Nodes: 2}, idleNodes(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel(r1.ID, "bob", false); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("bob cancels ann's: %v", err)
	}
	if _, err := b.Cancel(r1.ID, "ann", false); err != nil {
		t.Fatal(err)
	}

	b, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur := b.Current()
	if len(cur) != 1 || cur[0].ID != r2.ID || !cur[0].Start.Equal(r2.Start) || len(cur[0].Nodes) != 2 {
		t.Fatalf("after reopening: %+v, want only %+v", cur, r2)
	}
	r3, err := b.Reserve(Request{Owner: "ann", Start: start, End: start.Add(time.Hour), Nodes: 2}, idleNodes(4), nil)
	if err != nil || r3.ID == r1.ID || r3.ID == r2.ID {
		t.Fatalf("after reopening: %+v, %v", r3, err)
	}
	if _, err := b.Cancel("rsv999", "ann", true); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel of nothing: %v", err)
	}

	if err := os.WriteFile(path, []byte(`{"format": 1, "reser`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, nil); err == nil {
		t.Error("a damaged book was opened")
	}
}

// A hold keeps its machines from other requests until it is aborted, and
// an aborted or lapsed hold cannot be committed.
func TestTwoPhase(t *testing.T) {
	now := time.Now()
	clock := now
	b, _ := Open("", func() time.Time { return clock })
	nodes := idleNodes(2)
	req := Request{Owner: "ann", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Nodes: 2}
	h, err := b.Prepare(req, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prepare(req, nodes, nil); err == nil {
		t.Fatal("held machines granted again")
	}
	b.Abort(h)
	if _, err := b.Commit(h); !errors.Is(err, ErrNoHold) {
		t.Fatalf("commit after abort: %v", err)
	}
	h, err = b.Prepare(req, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(HoldTimeout)
	if _, err := b.Commit(h); !errors.Is(err, ErrNoHold) {
		t.Fatalf("commit after the hold lapsed: %v", err)
	}
	if _, err := b.Reserve(req, nodes, nil); err != nil {
		t.Fatalf("after the hold lapsed: %v", err)
	}
}

package reservation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustLoad(t testing.TB, name string) *Policy {
	t.Helper()
	p, err := LoadPolicy(filepath.Join("testdata", name))
	if err != nil || p == nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return p
}

// idleNodes returns n alive, idle nodes named node000, node001, ...
func idleNodes(n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("node%05d", i), IsAlive: true, LoadAvg: 0.1}
	}
	return nodes
}

// most returns the most machines one request of user, starting lead from
// now and lasting an hour, gets from nodes under pol: k is granted and
// k+1 refused.
func most(t *testing.T, pol *Policy, nodes []Node, user string, lead time.Duration) int {
	t.Helper()
	for k := 1; k <= len(nodes)+1; k++ {
		// A fresh book each time: the quota is per request.
		b, _ := Open("", nil)
		start := time.Now().Add(lead)
		_, err := b.Reserve(Request{Owner: user, Start: start, End: start.Add(time.Hour), Nodes: k}, nodes, pol)
		var refused *RefusedError
		if errors.As(err, &refused) {
			return k - 1
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return len(nodes)
}

// The paper's Figure 5, unchanged: the share of 100 machines one request
// may take, by the user's class and the time until the window starts, as
// the digest of the paper tabulates it.
func TestFigure5SharesByLeadTime(t *testing.T) {
	pol := mustLoad(t, "figure5.ad")
	nodes := idleNodes(100)
	for _, c := range []struct {
		lead         time.Duration
		general, low int
	}{
		{20 * time.Minute, 90, 50},
		{30 * time.Minute, 90, 50},
		{60 * time.Minute, 76, 43},
		{75 * time.Minute, 70, 40},
		{90 * time.Minute, 63, 36},
		{120 * time.Minute, 50, 30},
		{180 * time.Minute, 50, 30},
	} {
		if got := most(t, pol, nodes, "userX", c.lead); got != c.general {
			t.Errorf("general user %v ahead: %d machines, want %d", c.lead, got, c.general)
		}
		if got := most(t, pol, nodes, "someone", c.lead); got != c.low {
			t.Errorf("low-priority user %v ahead: %d machines, want %d", c.lead, got, c.low)
		}
	}
	for _, vip := range []string{"userA", "userB", "userC"} {
		if got := most(t, pol, nodes, vip, 3*time.Hour); got != 100 {
			t.Errorf("VIP %s: %d machines, want all 100", vip, got)
		}
	}
	// Refused outright: a window that has started, 7 days or more ahead,
	// or lasting 2 days or more.
	b, _ := Open("", nil)
	now := time.Now()
	for _, w := range [][2]time.Time{
		{now.Add(-time.Minute), now.Add(time.Hour)},
		{now.Add(7*24*time.Hour + time.Minute), now.Add(8 * 24 * time.Hour)},
		{now.Add(time.Hour), now.Add(49 * time.Hour)},
	} {
		if _, err := b.Reserve(Request{Owner: "userA", Start: w[0], End: w[1], Nodes: 1}, nodes, pol); err == nil {
			t.Errorf("window %v–%v accepted", w[0], w[1])
		}
	}
}

// Figure 4, unchanged: only alive, idle, unloaded machines not named
// unusable; refused when fewer than asked for pass.
func TestFigure4(t *testing.T) {
	pol := mustLoad(t, "figure4.ad")
	nodes := []Node{
		{Name: "busy", IsAlive: true, Jobs: []Job{{ID: "1.0", State: "Running"}}},
		{Name: "dead", IsAlive: false},
		{Name: "good1", IsAlive: true, LoadAvg: 0.3},
		{Name: "good2", IsAlive: true},
		{Name: "loaded", IsAlive: true, LoadAvg: 0.9},
		{Name: "unusableA", IsAlive: true},
	}
	b, _ := Open("", nil)
	start := time.Now().Add(time.Hour)
	r, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: 2}, nodes, pol)
	if err != nil || strings.Join(r.Nodes, ",") != "good1,good2" {
		t.Fatalf("reserve 2: %v, %v", r, err)
	}
	start = start.Add(2 * time.Hour)
	if _, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: 3}, nodes, pol); err == nil {
		t.Fatal("3 machines granted; only 2 pass the policy")
	}
}

// Figure 7, unchanged: a user's reservations over the past and next 7
// days bound what they may reserve; plus_rsvutil counts the book.
func TestFigure7(t *testing.T) {
	pol := mustLoad(t, "figure7.ad")
	b, _ := Open("", nil)
	nodes := idleNodes(100)
	now := time.Now()
	// 24 h × 40 machines = 960 node-hours: the next request still passes
	// (the paper counts the new request's own use only afterwards).
	start := now.Add(time.Hour)
	if _, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(24 * time.Hour), Nodes: 40}, nodes, pol); err != nil {
		t.Fatal(err)
	}
	start = start.Add(25 * time.Hour)
	if _, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: 50}, nodes, pol); err != nil {
		t.Fatalf("960 node-hours booked: %v", err)
	}
	// Now 1010 node-hours: refused; another user is not.
	start = start.Add(2 * time.Hour)
	if _, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: 1}, nodes, pol); err == nil {
		t.Fatal("over 1000 node-hours, yet granted")
	}
	if _, err := b.Reserve(Request{Owner: "v", Start: start, End: start.Add(time.Hour), Nodes: 1}, nodes, pol); err != nil {
		t.Fatalf("another user: %v", err)
	}
}

// Figure 8, unchanged: a machine whose running job would still run at the
// window's start (by its wall time, or an hour if it declares none) is
// not reservable; evaluateList and reverseSort find the latest finish.
func TestFigure8(t *testing.T) {
	pol := mustLoad(t, "figure8.ad")
	now := time.Now()
	nodes := []Node{
		{Name: "a", IsAlive: true, Jobs: []Job{{ID: "1.0", State: "Running", Start: now, WallTime: 3 * time.Hour}}},
		{Name: "b", IsAlive: true, Jobs: []Job{{ID: "2.0", State: "Running", Start: now}}},
		{Name: "c", IsAlive: true, Jobs: []Job{{ID: "3.0", State: "Suspended", Start: now, WallTime: 9 * time.Hour}}},
		{Name: "d", IsAlive: true},
	}
	for _, c := range []struct {
		lead time.Duration
		want string
	}{
		{30 * time.Minute, "c,d"},
		{2 * time.Hour, "b,c,d"},
		{4 * time.Hour, "a,b,c,d"},
	} {
		b, _ := Open("", nil)
		var got []string
		for {
			start := now.Add(c.lead)
			r, err := b.Reserve(Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: 1}, nodes, pol)
			if err != nil {
				break
			}
			got = append(got, r.Nodes...)
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%v ahead: reservable %v, want %s", c.lead, got, c.want)
		}
	}
}

// A refusal says why: the counts, and the policy's RefusalReason.
func TestRefusalReason(t *testing.T) {
	pol, err := ParsePolicy(`PLUS_NODE_RESERVABLE = PLUS_RSV_OWNER == "vip"; RefusalReason = strcat(PLUS_RSV_OWNER, " is no VIP")`, "inline")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Open("", nil)
	start := time.Now().Add(time.Hour)
	_, err = b.Reserve(Request{Owner: "joe", Start: start, End: start.Add(time.Hour), Nodes: 1}, idleNodes(3), pol)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "joe is no VIP") || !strings.Contains(refused.Reason, "grants 0") {
		t.Fatalf("refusal: %v", err)
	}
	if _, err := ParsePolicy("X = 1", "nothing"); err == nil {
		t.Error("a policy without PLUS_NODE_RESERVABLE was accepted")
	}
	if p, err := LoadPolicy(filepath.Join(t.TempDir(), "missing")); p != nil || err != nil {
		t.Errorf("missing file: %v, %v; want no policy", p, err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("PLUS_NODE_RESERVABLE = ("), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad file: %v", err)
	}
}

// The functions the paper adds, on their own.
func TestPaperFunctions(t *testing.T) {
	pol, err := ParsePolicy(`
		l = linear(relTime("1:00:00"), relTime("00:30:00"), 90.0, relTime("02:00:00"), 50.0);
		s = reverseSort({3, 1.5, 7});
		st = reverseSort({"a", "c", "b"});
		bad = reverseSort({1, "a"});
		sq = evaluateList({1, 2, 3}, "x", "square");
		square = x * x;
		PLUS_NODE_RESERVABLE = true;
	`, "inline")
	if err != nil {
		t.Fatal(err)
	}
	e := pol.env(Request{Owner: "u"}, nil, nil)
	for attr, want := range map[string]string{
		"l":   "7.666666666666667E+01",
		"s":   "{ 7,3,1.500000000000000E+00 }",
		"st":  `{ "c","b","a" }`,
		"bad": "error",
		"sq":  "{ 1,4,9 }",
	} {
		if got := e.m.EvalIn(&e.policy, attr).String(); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
}

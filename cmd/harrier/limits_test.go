package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestConcurrencyLimits: jobs of two users that name a limited resource
// (SW_LIMIT = 1, names case-insensitive) run one at a time on a machine
// with slots to spare, while a job naming another resource runs beside
// them, and one whose use exceeds the default limit never starts. The
// matchmaker publishes each limit's use in its ad while jobs hold it.
// The same with four static slots and with a partitionable slot of four
// CPUs, whose dynamic slots the startd advertises after the match.
func TestConcurrencyLimits(t *testing.T) {
	for _, c := range []struct{ name, slots string }{
		{"static", "NUM_SLOTS = 4"},
		{"partitionable", "NUM_CPUS = 4\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = true"},
	} {
		t.Run(c.name, func(t *testing.T) { testConcurrencyLimits(t, c.slots) })
	}
}

func testConcurrencyLimits(t *testing.T, slots string) {
	p := startPoolFrom(t, publicBinary(t), 1, slots+"\nNEGOTIATOR_INTERVAL = 1\nSW_LIMIT = 1\nCONCURRENCY_LIMIT_DEFAULT = 2")
	alice, bob := newUser(t), newUser(t)
	const sleeper = "executable = /bin/sleep\narguments = 3\nshould_transfer_files = NO\n"
	// First, and long enough to be running when the first sw job starts
	// however slow the machine.
	other := p.submitAs(t, bob.Username, bob.HomeDir, "other.sub",
		"executable = /bin/sleep\narguments = 10\nshould_transfer_files = NO\nconcurrency_limits = db:2\nqueue\n")
	a := p.submitAs(t, alice.Username, alice.HomeDir, "sw.sub", sleeper+"concurrency_limits = SW\nqueue 2\n")
	b := p.submitAs(t, bob.Username, bob.HomeDir, "sw.sub", sleeper+"concurrency_limits = sw\nqueue\n")
	tooMuch := p.submitAs(t, bob.Username, bob.HomeDir, "much.sub", sleeper+"concurrency_limits = db:3\nqueue\n")

	eventually(t, 30*time.Second, "the matchmaker to publish the use of sw", func() bool {
		for _, ad := range p.poolAds(t, "Negotiator") {
			if v, ok := ad.EvalReal("ConcurrencyLimit_sw"); ok && v == 1 {
				return true
			}
		}
		return false
	})
	swJobs := []string{fmt.Sprintf("%d.0", a), fmt.Sprintf("%d.1", a), fmt.Sprintf("%d.0", b)}
	for _, id := range append(swJobs, fmt.Sprintf("%d.0", other)) {
		if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
			t.Fatalf("job %s did not complete: exit %d: %s", id, code, out)
		}
	}
	type run struct {
		id         string
		start, end int64
	}
	runOf := func(id string) run {
		ad := p.historyAd(t, id)
		if ad["ConcurrencyLimits"] == nil {
			t.Errorf("job %s has no ConcurrencyLimits: %v", id, ad)
		}
		start, _ := ad["JobCurrentStartDate"].(float64)
		end, _ := ad["CompletionDate"].(float64)
		return run{id, int64(start), int64(end)}
	}
	var runs []run
	for _, id := range swJobs {
		runs = append(runs, runOf(id))
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].start < runs[j].start })
	for i := 1; i < len(runs); i++ {
		if runs[i].start < runs[i-1].end {
			t.Errorf("jobs %s and %s ran at once with SW_LIMIT = 1: %v", runs[i-1].id, runs[i].id, runs)
		}
	}
	// The slots were free: the job limited apart ran beside the first.
	db := runOf(fmt.Sprintf("%d.0", other))
	if db.start >= runs[0].end || db.end <= runs[0].start {
		t.Errorf("the job naming db:2 waited for the sw jobs: %v, sw %v", db, runs)
	}
	// Its owner's analysis says why.
	out, code := harrierAs(t, p.env, bob.Username, "q", "-better-analyze", fmt.Sprintf("%d.0", tooMuch))
	if code != 0 || !strings.Contains(out, "db: 3 of it, more than its limit of 2: the job can never start") {
		t.Errorf("q -better-analyze of the job naming db:3: exit %d:\n%s", code, out)
	}
	if st := p.jobStatus(t, fmt.Sprintf("%d.0", tooMuch)); st != 1 {
		t.Errorf("the job naming db:3 with a default limit of 2 has status %d, want 1 (idle)\n%s\n%s", st, p.must(t, "q", "-long"), p.must(t, "history", "-long", fmt.Sprintf("%d.0", tooMuch)))
	}
}

package jobqueue

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"harrier.dev/harrier/classad"
)

func TestJobID(t *testing.T) {
	for _, s := range []string{"12.3", "1.0", "2147483647.0"} {
		id, err := ParseJobID(s)
		if err != nil || id.String() != s {
			t.Errorf("ParseJobID(%q) = %v, %v", s, id, err)
		}
	}
	for _, s := range []string{"", "12", "12.", ".3", "-1.0", "1.+2", "a.b", "1.2.3", "99999999999.0"} {
		if id, err := ParseJobID(s); err == nil {
			t.Errorf("ParseJobID(%q) = %v, want error", s, id)
		}
	}
}

func TestCommitAndReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{})
	c, err := l.NextCluster(ctx, "alice")
	if err != nil || c != 1 {
		t.Fatalf("NextCluster = %d, %v; want 1", c, err)
	}
	var txn Txn
	txn.UseCluster(c, "alice")
	for p := range 5 {
		txn.NewJob(JobID{c, p}, jobAd(c, p))
	}
	commitT(t, l, &txn)
	txn = Txn{}
	txn.SetValue(JobID{c, 1}, "JobStatus", classad.Int(5))
	txn.Set(JobID{c, 1}, "HoldReason", expr(`"held by user"`))
	txn.Delete(JobID{c, 2}, "Rank")
	txn.Destroy(JobID{c, 4})
	commitT(t, l, &txn)

	if l.Len() != 4 {
		t.Fatalf("Len = %d, want 4", l.Len())
	}
	ad, ok := l.Get(JobID{c, 1})
	if !ok {
		t.Fatal("job 1.1 missing")
	}
	if st, _ := ad.EvalInt("JobStatus"); st != 5 {
		t.Errorf("JobStatus = %d, want 5", st)
	}
	ad.SetInt("JobStatus", 99) // a copy: the store must not change
	if ad, _ := l.Get(JobID{c, 1}); ad != nil {
		if st, _ := ad.EvalInt("JobStatus"); st != 5 {
			t.Errorf("Get returned a shared ad: JobStatus = %d", st)
		}
	}
	before := dump(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openT(t, dir, Options{})
	defer l.Close()
	if after := dump(l); after != before {
		t.Errorf("after reopen:\n%s\nwant:\n%s", after, before)
	}
	if _, ok := l.Get(JobID{c, 2}); !ok {
		t.Fatal("1.2 missing")
	}
	if ad, _ := l.Get(JobID{c, 2}); ad != nil {
		if _, ok := ad.Lookup("Rank"); ok {
			t.Error("deleted attribute Rank came back")
		}
	}
	if c2, _ := l.NextCluster(ctx, "alice"); c2 != 2 {
		t.Errorf("NextCluster after reopen = %d, want 2", c2)
	}
}

func TestCommitChecks(t *testing.T) {
	l := openT(t, t.TempDir(), Options{NoSync: true})
	defer l.Close()
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	commitT(t, l, &txn)

	cases := []struct {
		name string
		txn  func(*Txn)
		want error
	}{
		{"duplicate", func(t *Txn) { t.NewJob(JobID{1, 0}, jobAd(1, 0)) }, ErrExists},
		{"set missing", func(t *Txn) { t.SetValue(JobID{1, 1}, "A", classad.Int(1)) }, ErrNotFound},
		{"destroy missing", func(t *Txn) { t.Destroy(JobID{2, 0}) }, ErrNotFound},
		{"destroyed earlier in txn", func(t *Txn) { t.Destroy(JobID{1, 0}); t.Delete(JobID{1, 0}, "A") }, ErrNotFound},
		{"added twice in txn", func(t *Txn) { t.NewJob(JobID{3, 0}, jobAd(3, 0)); t.NewJob(JobID{3, 0}, jobAd(3, 0)) }, ErrExists},
		{"bad id", func(t *Txn) { t.NewJob(JobID{0, 0}, jobAd(0, 0)) }, errBadID},
	}
	for _, tc := range cases {
		var txn Txn
		// A valid first op shows that a failing txn applies nothing.
		txn.NewJob(JobID{9, 0}, jobAd(9, 0))
		tc.txn(&txn)
		err := l.Commit(context.Background(), &txn)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Commit = %v, want %v", tc.name, err, tc.want)
		}
		if _, ok := l.Get(JobID{9, 0}); ok {
			t.Fatalf("%s: failed txn was partly applied", tc.name)
		}
	}
	// Within one txn a destroyed job may be added again.
	txn = Txn{}
	txn.Destroy(JobID{1, 0})
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	txn.SetValue(JobID{1, 0}, "JobStatus", classad.Int(2))
	commitT(t, l, &txn)
	if ad, _ := l.Get(JobID{1, 0}); ad == nil {
		t.Fatal("1.0 missing")
	} else if st, _ := ad.EvalInt("JobStatus"); st != 2 {
		t.Errorf("JobStatus = %d", st)
	}
}

func TestNextClusterNeverReused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{NoSync: true})
	var txn Txn
	txn.NewJob(JobID{10, 0}, jobAd(10, 0)) // submitted with an explicit number
	commitT(t, l, &txn)
	if c, _ := l.NextCluster(ctx, "alice"); c != 11 {
		t.Errorf("NextCluster = %d, want 11", c)
	}
	txn = Txn{}
	txn.NewJob(JobID{20, 0}, jobAd(20, 0))
	txn.Destroy(JobID{20, 0})
	commitT(t, l, &txn)
	txn = Txn{}
	txn.Destroy(JobID{10, 0})
	commitT(t, l, &txn)
	l.Close()
	l = openT(t, dir, Options{NoSync: true})
	defer l.Close()
	if c, _ := l.NextCluster(ctx, "alice"); c != 21 {
		t.Errorf("NextCluster after reopen = %d, want 21", c)
	}
}

func TestConcurrentCommits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{})
	const workers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			c, err := l.NextCluster(ctx, "alice")
			if err != nil {
				errs <- err
				return
			}
			var txn Txn
			txn.NewJob(JobID{c, 0}, jobAd(c, 0))
			if err := l.Commit(ctx, &txn); err != nil {
				errs <- err
				return
			}
			for i := range each {
				var txn Txn
				txn.SetValue(JobID{c, 0}, "Counter", classad.Int(int64(i)))
				txn.SetValue(JobID{c, 0}, "Worker", classad.Int(int64(w)))
				if err := l.Commit(ctx, &txn); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(l *Log) {
		t.Helper()
		if l.Len() != workers {
			t.Fatalf("Len = %d, want %d", l.Len(), workers)
		}
		l.Scan(func(id JobID, ad *classad.ClassAd) bool {
			if n, _ := ad.EvalInt("Counter"); n != each-1 {
				t.Errorf("%s: Counter = %d, want %d", id, n, each-1)
			}
			return true
		})
	}
	check(l)
	l.Close()
	l = openT(t, dir, Options{})
	defer l.Close()
	check(l)
}

func TestScanOrderAndStop(t *testing.T) {
	l := openT(t, t.TempDir(), Options{NoSync: true})
	defer l.Close()
	var txn Txn
	for _, id := range []JobID{{3, 1}, {1, 0}, {3, 0}, {2, 5}, {2, 10}} {
		txn.NewJob(id, jobAd(id.Cluster, id.Proc))
	}
	commitT(t, l, &txn)
	var got []string
	l.Scan(func(id JobID, _ *classad.ClassAd) bool {
		got = append(got, id.String())
		return len(got) < 4
	})
	want := []string{"1.0", "2.5", "2.10", "3.0"}
	if len(got) != len(want) {
		t.Fatalf("Scan = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Scan = %v, want %v", got, want)
		}
	}
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{NoSync: true})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", err)
	}
	l.Close()
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	if err := l.Commit(context.Background(), &txn); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close = %v", err)
	}
	if _, err := l.NextCluster(context.Background(), "alice"); !errors.Is(err, ErrClosed) {
		t.Errorf("NextCluster after Close = %v", err)
	}
	if err := l.History(func(*classad.ClassAd) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Errorf("History after Close = %v", err)
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{})
	var ads []*classad.ClassAd
	var txn Txn
	for p := range 10 {
		ads = append(ads, jobAd(7, p))
		txn.NewJob(JobID{7, p}, jobAd(7, p))
	}
	commitT(t, l, &txn)
	for _, part := range [][]*classad.ClassAd{ads[:3], ads[3:]} {
		var txn Txn
		for _, ad := range part {
			txn.Retire(jobIDOf(ad), ad.Copy())
		}
		commitT(t, l, &txn)
	}
	if l.Len() != 0 {
		t.Errorf("%d jobs left in the queue after retiring them all", l.Len())
	}
	l.Close()
	// A torn append at the end is cut off on open.
	path := filepath.Join(dir, historyName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("HJQ\x01\x40\x00\x00\x00garbage"))
	f.Close()

	l = openT(t, dir, Options{})
	defer l.Close()
	var got []string
	err = l.History(func(ad *classad.ClassAd) bool {
		ad.SetInt("ProcId", -1) // callers may modify what they get
		got = append(got, ad.String())
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ads) {
		t.Fatalf("History gave %d ads, want %d", len(got), len(ads))
	}
	for i, ad := range ads {
		ad.SetInt("ProcId", -1)
		if got[i] != ad.String() {
			t.Errorf("ad %d = %s\nwant %s", i, got[i], ad.String())
		}
	}
	n := 0
	l.History(func(*classad.ClassAd) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("History did not stop: %d calls", n)
	}
}

// TestScanDoesNotHoldUpCommits commits from inside a Scan callback, which
// would deadlock if Scan held the queue locked, and checks that the Scan
// goes on seeing the queue as it was when it began.
func TestScanDoesNotHoldUpCommits(t *testing.T) {
	l := openT(t, t.TempDir(), Options{NoSync: true})
	defer l.Close()
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	txn.NewJob(JobID{1, 1}, jobAd(1, 1))
	commitT(t, l, &txn)
	seen := 0
	l.Scan(func(id JobID, ad *classad.ClassAd) bool {
		seen++
		if st, _ := ad.EvalInt("JobStatus"); st != 1 {
			t.Errorf("%s: Scan saw JobStatus %d, a change made after it began", id, st)
		}
		var txn Txn
		txn.SetValue(JobID{1, 1}, "JobStatus", classad.Int(5))
		if id.Proc == 0 {
			txn.NewJob(JobID{2, 0}, jobAd(2, 0))
		}
		commitT(t, l, &txn)
		return true
	})
	if seen != 2 {
		t.Errorf("Scan visited %d jobs, want the 2 there when it began", seen)
	}
	if l.Len() != 3 {
		t.Errorf("Len = %d, want 3", l.Len())
	}
}

func TestCommitContext(t *testing.T) {
	l := openT(t, t.TempDir(), Options{NoSync: true})
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	if err := l.Commit(ctx, &txn); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context = %v", err)
	}
	if l.Len() != 0 {
		t.Error("a Commit refused for its context was applied")
	}
}

func TestSortByIDMatchesComparison(t *testing.T) {
	var all []scanEntry
	for p := -1; p < 500; p++ { // dense, with the factory
		if p%7 != 3 {
			all = append(all, scanEntry{id: JobID{Cluster: 4, Proc: p}})
		}
	}
	for p := range 40 { // sparse
		all = append(all, scanEntry{id: JobID{Cluster: 2, Proc: p * p * 13}})
	}
	all = append(all, scanEntry{id: JobID{Cluster: 9, Proc: 0}}, scanEntry{id: JobID{Cluster: 1, Proc: 3}})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	want := slices.Clone(all)
	slices.SortFunc(want, func(a, b scanEntry) int { return a.id.Compare(b.id) })
	sortByID(all)
	if !slices.Equal(all, want) {
		t.Errorf("sortByID differs from a sort by comparison:\n got %v\nwant %v", all, want)
	}
}

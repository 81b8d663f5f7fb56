// Package storetest is the conformance suite of [jobqueue.Store] and
// [jobqueue.HistoryStore]: the tests of the contract that every backend
// of the agent's job queue passes, the embedded log and PostgreSQL alike.
// A backend's test calls [Run] with a way to make an empty queue.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// Store is what a backend provides: the queue and its history.
type Store interface {
	jobqueue.Store
	jobqueue.HistoryStore
}

// Config is what the suite asks of a store it opens.
type Config struct {
	// MaxReservations as in [jobqueue.Options]; zero for the default.
	MaxReservations int
}

// Opener opens a queue. Every call opens the same queue, as an agent that
// restarts does: the suite closes one store before it opens the next,
// except to check that a second one is refused while the first is open.
type Opener func(cfg Config) (Store, error)

// NewQueue makes an empty queue for one test and returns how to open it.
type NewQueue func(t *testing.T) Opener

// Run runs the suite, each test on a queue of its own.
func Run(t *testing.T, newQueue NewQueue) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"CommitAndReopen", testCommitAndReopen},
		{"CommitChecks", testCommitChecks},
		{"NextClusterNeverReused", testNextClusterNeverReused},
		{"ConcurrentCommits", testConcurrentCommits},
		{"ScanOrderAndStop", testScanOrderAndStop},
		{"ScanDoesNotHoldUpCommits", testScanDoesNotHoldUpCommits},
		{"ScannedAdsNeverChange", testScannedAdsNeverChange},
		{"CommitContext", testCommitContext},
		{"Closed", testClosed},
		{"OpenedOnce", testOpenedOnce},
		{"History", testHistory},
		{"RetireChecks", testRetireChecks},
		{"ReservationsBelongToTheirOwner", testReservationsBelongToTheirOwner},
		{"ReservationsBounded", testReservationsBounded},
		{"ReservationUsedOnce", testReservationUsedOnce},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newQueue(t)) })
	}
}

// JobAd returns a typical job ad of 25 attributes, as a submission of
// cluster c makes for proc p.
func JobAd(c, p int) *classad.ClassAd {
	ad := classad.New()
	ad.SetInt("ClusterId", int64(c))
	ad.SetInt("ProcId", int64(p))
	ad.SetString("Owner", "alice")
	ad.SetString("Cmd", "/home/alice/bin/analyse")
	ad.SetString("Arguments", fmt.Sprintf("--input in.%d.dat --seed %d", p, p*7))
	ad.SetString("Iwd", "/home/alice/run")
	ad.SetString("In", "/dev/null")
	ad.SetString("Out", fmt.Sprintf("out.%d", p))
	ad.SetString("Err", fmt.Sprintf("err.%d", p))
	ad.SetString("UserLog", "/home/alice/run/job.log")
	ad.SetInt("JobUniverse", 5)
	ad.SetInt("JobStatus", 1)
	ad.SetInt("QDate", 1795000000)
	ad.SetInt("RequestCpus", 1)
	ad.SetInt("RequestMemory", 2048)
	ad.SetInt("RequestDisk", 1048576)
	ad.SetBool("ShouldTransferFiles", false)
	ad.SetString("Environment", "PATH=/usr/bin:/bin HOME=/home/alice")
	ad.SetInt("MaxRetries", 3)
	ad.SetInt("NumJobStarts", 0)
	ad.SetInt("ImageSize", 1000)
	must(ad.SetExpr("Requirements", `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Memory >= RequestMemory)`))
	must(ad.SetExpr("Rank", "TARGET.Mips"))
	must(ad.SetExpr("PeriodicRemove", "(JobStatus == 5) && (time() - EnteredCurrentStatus > 86400)"))
	ad.SetInt("EnteredCurrentStatus", 1795000000)
	return ad
}

// Submission builds the transaction of one cluster of n jobs the way a
// submit does: each proc ad is the first one with its own ProcId,
// Arguments and output files, sharing the other expressions.
func Submission(c, n int) *jobqueue.Txn {
	base := JobAd(c, 0)
	var txn jobqueue.Txn
	for p := range n {
		ad := base.Copy()
		ad.SetInt("ProcId", int64(p))
		ad.SetString("Arguments", fmt.Sprintf("--input in.%d.dat --seed %d", p, p*7))
		ad.SetString("Out", fmt.Sprintf("out.%d", p))
		ad.SetString("Err", fmt.Sprintf("err.%d", p))
		txn.NewJob(jobqueue.JobID{Cluster: c, Proc: p}, ad)
	}
	return &txn
}

// Canonical renders an ad with its attributes sorted, for comparing ads
// whose stores do not keep the order of attributes.
func Canonical(ad *classad.ClassAd) string {
	names := ad.Names()
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	var b strings.Builder
	for _, n := range names {
		e, _ := ad.Lookup(n)
		fmt.Fprintf(&b, "%s = %s; ", n, e)
	}
	return b.String()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func expr(s string) classad.Expr {
	x, err := classad.ParseExpr(s)
	must(err)
	return x
}

func id(c, p int) jobqueue.JobID { return jobqueue.JobID{Cluster: c, Proc: p} }

// open opens the queue, closed when the test ends unless closed before.
func open(t *testing.T, o Opener, cfg Config) Store {
	t.Helper()
	s, err := o(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func commit(t *testing.T, s Store, txn *jobqueue.Txn) {
	t.Helper()
	if err := s.Commit(context.Background(), txn); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// dump renders the whole queue for comparison.
func dump(s Store) string {
	var b strings.Builder
	s.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		fmt.Fprintf(&b, "%s %s\n", id, Canonical(ad))
		return true
	})
	return b.String()
}

func testCommitAndReopen(t *testing.T, o Opener) {
	ctx := context.Background()
	s := open(t, o, Config{})
	c, err := s.NextCluster(ctx, "alice")
	if err != nil || c != 1 {
		t.Fatalf("NextCluster = %d, %v; want 1", c, err)
	}
	var txn jobqueue.Txn
	txn.UseCluster(c, "alice")
	for p := range 5 {
		txn.NewJob(id(c, p), JobAd(c, p))
	}
	commit(t, s, &txn)
	txn = jobqueue.Txn{}
	txn.SetValue(id(c, 1), "JobStatus", classad.Int(5))
	txn.Set(id(c, 1), "HoldReason", expr(`"held by user"`))
	txn.SetValue(id(c, 1), "RemoteWallClockTime", classad.Real(12.5))
	txn.Set(id(c, 1), "Env", expr(`{ "a", 1, 2.0, undefined, [ x = 3 ] }`))
	txn.Delete(id(c, 2), "Rank")
	txn.Destroy(id(c, 4))
	commit(t, s, &txn)

	if s.Len() != 4 {
		t.Fatalf("Len = %d, want 4", s.Len())
	}
	ad, ok := s.Get(id(c, 1))
	if !ok {
		t.Fatal("job 1.1 missing")
	}
	if st, _ := ad.EvalInt("JobStatus"); st != 5 {
		t.Errorf("JobStatus = %d, want 5", st)
	}
	ad.SetInt("JobStatus", 99) // a copy: the store must not change
	if ad, _ := s.Get(id(c, 1)); ad != nil {
		if st, _ := ad.EvalInt("JobStatus"); st != 5 {
			t.Errorf("Get returned a shared ad: JobStatus = %d", st)
		}
	}
	before := dump(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, o, Config{})
	if after := dump(s); after != before {
		t.Errorf("after reopen:\n%s\nwant:\n%s", after, before)
	}
	if ad, ok := s.Get(id(c, 2)); !ok {
		t.Fatal("1.2 missing")
	} else if _, ok := ad.Lookup("Rank"); ok {
		t.Error("deleted attribute Rank came back")
	}
	if c2, _ := s.NextCluster(ctx, "alice"); c2 != 2 {
		t.Errorf("NextCluster after reopen = %d, want 2", c2)
	}
}

func testCommitChecks(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	var txn jobqueue.Txn
	txn.NewJob(id(1, 0), JobAd(1, 0))
	commit(t, s, &txn)

	cases := []struct {
		name string
		txn  func(*jobqueue.Txn)
		want error
	}{
		{"duplicate", func(t *jobqueue.Txn) { t.NewJob(id(1, 0), JobAd(1, 0)) }, jobqueue.ErrExists},
		{"set missing", func(t *jobqueue.Txn) { t.SetValue(id(1, 1), "A", classad.Int(1)) }, jobqueue.ErrNotFound},
		{"destroy missing", func(t *jobqueue.Txn) { t.Destroy(id(2, 0)) }, jobqueue.ErrNotFound},
		{"destroyed earlier in txn", func(t *jobqueue.Txn) { t.Destroy(id(1, 0)); t.Delete(id(1, 0), "A") }, jobqueue.ErrNotFound},
		{"added twice in txn", func(t *jobqueue.Txn) { t.NewJob(id(3, 0), JobAd(3, 0)); t.NewJob(id(3, 0), JobAd(3, 0)) }, jobqueue.ErrExists},
		{"bad id", func(t *jobqueue.Txn) { t.NewJob(id(0, 0), JobAd(0, 0)) }, jobqueue.ErrBadID},
		{"bad proc", func(t *jobqueue.Txn) { t.NewJob(id(4, -2), JobAd(4, -2)) }, jobqueue.ErrBadID},
	}
	for _, tc := range cases {
		var txn jobqueue.Txn
		// A valid first op shows that a failing txn applies nothing.
		txn.NewJob(id(9, 0), JobAd(9, 0))
		tc.txn(&txn)
		err := s.Commit(context.Background(), &txn)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Commit = %v, want %v", tc.name, err, tc.want)
		}
		if _, ok := s.Get(id(9, 0)); ok {
			t.Fatalf("%s: failed txn was partly applied", tc.name)
		}
	}
	// Within one txn a destroyed job may be added again.
	txn = jobqueue.Txn{}
	txn.Destroy(id(1, 0))
	txn.NewJob(id(1, 0), JobAd(1, 0))
	txn.SetValue(id(1, 0), "JobStatus", classad.Int(2))
	commit(t, s, &txn)
	// A cluster's own ad is proc -1.
	txn = jobqueue.Txn{}
	txn.NewJob(id(5, -1), JobAd(5, -1))
	commit(t, s, &txn)
	s.Close()
	s = open(t, o, Config{})
	if ad, _ := s.Get(id(1, 0)); ad == nil {
		t.Fatal("1.0 missing")
	} else if st, _ := ad.EvalInt("JobStatus"); st != 2 {
		t.Errorf("JobStatus = %d", st)
	}
	if _, ok := s.Get(id(5, -1)); !ok || s.Len() != 2 {
		t.Errorf("after reopening: 5.-1 there %v, Len %d; want true, 2", ok, s.Len())
	}
}

func testNextClusterNeverReused(t *testing.T, o Opener) {
	ctx := context.Background()
	s := open(t, o, Config{})
	var txn jobqueue.Txn
	txn.NewJob(id(10, 0), JobAd(10, 0)) // submitted with an explicit number
	commit(t, s, &txn)
	if c, _ := s.NextCluster(ctx, "alice"); c != 11 {
		t.Errorf("NextCluster = %d, want 11", c)
	}
	txn = jobqueue.Txn{}
	txn.NewJob(id(20, 0), JobAd(20, 0))
	txn.Destroy(id(20, 0))
	commit(t, s, &txn)
	txn = jobqueue.Txn{}
	txn.Destroy(id(10, 0))
	commit(t, s, &txn)
	s.Close()
	s = open(t, o, Config{})
	if c, _ := s.NextCluster(ctx, "alice"); c != 21 {
		t.Errorf("NextCluster after reopen = %d, want 21", c)
	}
}

func testConcurrentCommits(t *testing.T, o Opener) {
	ctx := context.Background()
	s := open(t, o, Config{})
	const workers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			c, err := s.NextCluster(ctx, "alice")
			if err != nil {
				errs <- err
				return
			}
			var txn jobqueue.Txn
			txn.UseCluster(c, "alice")
			txn.NewJob(id(c, 0), JobAd(c, 0))
			if err := s.Commit(ctx, &txn); err != nil {
				errs <- err
				return
			}
			for i := range each {
				var txn jobqueue.Txn
				txn.SetValue(id(c, 0), "Counter", classad.Int(int64(i)))
				txn.SetValue(id(c, 0), "Worker", classad.Int(int64(w)))
				if err := s.Commit(ctx, &txn); err != nil {
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
	check := func(s Store) {
		t.Helper()
		if s.Len() != workers {
			t.Fatalf("Len = %d, want %d", s.Len(), workers)
		}
		s.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
			if n, _ := ad.EvalInt("Counter"); n != each-1 {
				t.Errorf("%s: Counter = %d, want %d", id, n, each-1)
			}
			return true
		})
	}
	check(s)
	s.Close()
	check(open(t, o, Config{}))
}

func testScanOrderAndStop(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	var txn jobqueue.Txn
	for _, jid := range []jobqueue.JobID{id(3, 1), id(1, 0), id(3, 0), id(2, 5), id(2, 10), id(2, -1)} {
		txn.NewJob(jid, JobAd(jid.Cluster, jid.Proc))
	}
	commit(t, s, &txn)
	var got []string
	s.Scan(func(id jobqueue.JobID, _ *classad.ClassAd) bool {
		got = append(got, id.String())
		return len(got) < 5
	})
	if want := []string{"1.0", "2.-1", "2.5", "2.10", "3.0"}; !slices.Equal(got, want) {
		t.Fatalf("Scan = %v, want %v", got, want)
	}
}

// testScanDoesNotHoldUpCommits commits from inside a Scan callback, which
// would deadlock if Scan held the queue locked, and checks that the Scan
// goes on seeing the queue as it was when it began.
func testScanDoesNotHoldUpCommits(t *testing.T, o Opener) {
	s := openWithTwoJobs(t, o)
	seen := 0
	s.Scan(func(jid jobqueue.JobID, ad *classad.ClassAd) bool {
		seen++
		if st, _ := ad.EvalInt("JobStatus"); st != 1 {
			t.Errorf("%s: Scan saw JobStatus %d, a change made after it began", jid, st)
		}
		var txn jobqueue.Txn
		txn.SetValue(id(1, 1), "JobStatus", classad.Int(5))
		if jid.Proc == 0 {
			txn.NewJob(id(2, 0), JobAd(2, 0))
		}
		commit(t, s, &txn)
		return true
	})
	if seen != 2 {
		t.Errorf("Scan visited %d jobs, want the 2 there when it began", seen)
	}
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
}

// testScannedAdsNeverChange checks what the agent's advertiser relies
// on to keep what it derived from each ad: an ad Scan handed out is never
// changed (a change to a job replaces its ad), and a job not changed
// keeps its ad.
func testScannedAdsNeverChange(t *testing.T, o Opener) {
	s := openWithTwoJobs(t, o)
	scan := func() map[jobqueue.JobID]*classad.ClassAd {
		ads := map[jobqueue.JobID]*classad.ClassAd{}
		s.Scan(func(jid jobqueue.JobID, ad *classad.ClassAd) bool { ads[jid] = ad; return true })
		return ads
	}
	before := scan()
	text := before[id(1, 1)].String()
	var txn jobqueue.Txn
	txn.SetValue(id(1, 1), "JobStatus", classad.Int(2))
	txn.Delete(id(1, 1), "Arguments")
	commit(t, s, &txn)
	if got := before[id(1, 1)].String(); got != text {
		t.Errorf("a commit changed the ad an earlier Scan handed out:\n%s\nbecame\n%s", text, got)
	}
	after := scan()
	if st, _ := after[id(1, 1)].EvalInt("JobStatus"); st != 2 || after[id(1, 1)] == before[id(1, 1)] {
		t.Errorf("Scan after the change: JobStatus %d, the same ad %v", st, after[id(1, 1)] == before[id(1, 1)])
	}
	if after[id(1, 0)] != before[id(1, 0)] {
		t.Errorf("job 1.0, not changed, has another ad")
	}
}

// openWithTwoJobs opens a store holding jobs 1.0 and 1.1.
func openWithTwoJobs(t *testing.T, o Opener) Store {
	t.Helper()
	s := open(t, o, Config{})
	var txn jobqueue.Txn
	txn.NewJob(id(1, 0), JobAd(1, 0))
	txn.NewJob(id(1, 1), JobAd(1, 1))
	commit(t, s, &txn)
	return s
}

func testCommitContext(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var txn jobqueue.Txn
	txn.NewJob(id(1, 0), JobAd(1, 0))
	if err := s.Commit(ctx, &txn); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context = %v", err)
	}
	if _, err := s.NextCluster(ctx, "alice"); !errors.Is(err, context.Canceled) {
		t.Errorf("NextCluster with a cancelled context = %v", err)
	}
	if s.Len() != 0 {
		t.Error("a Commit refused for its context was applied")
	}
}

func testClosed(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	s.Close()
	var txn jobqueue.Txn
	txn.NewJob(id(1, 0), JobAd(1, 0))
	if err := s.Commit(context.Background(), &txn); !errors.Is(err, jobqueue.ErrClosed) {
		t.Errorf("Commit after Close = %v", err)
	}
	if _, err := s.NextCluster(context.Background(), "alice"); !errors.Is(err, jobqueue.ErrClosed) {
		t.Errorf("NextCluster after Close = %v", err)
	}
	if err := s.History(func(*classad.ClassAd) bool { return true }); !errors.Is(err, jobqueue.ErrClosed) {
		t.Errorf("History after Close = %v", err)
	}
	if err := s.Close(); !errors.Is(err, jobqueue.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
}

// testOpenedOnce: a queue is open in one store at a time, so that two
// agents cannot both change it.
func testOpenedOnce(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	if s2, err := o(Config{}); !errors.Is(err, jobqueue.ErrLocked) {
		if err == nil {
			s2.Close()
		}
		t.Errorf("second open = %v, want ErrLocked", err)
	}
	s.Close()
	open(t, o, Config{})
}

func testHistory(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	var ads []*classad.ClassAd
	var txn jobqueue.Txn
	for p := range 10 {
		ads = append(ads, JobAd(7, p))
		txn.NewJob(id(7, p), JobAd(7, p))
	}
	commit(t, s, &txn)
	for _, part := range [][]*classad.ClassAd{ads[:3], ads[3:]} {
		var txn jobqueue.Txn
		for _, ad := range part {
			c, _ := ad.EvalInt("ClusterId")
			p, _ := ad.EvalInt("ProcId")
			txn.Retire(id(int(c), int(p)), ad.Copy())
		}
		commit(t, s, &txn)
	}
	if s.Len() != 0 {
		t.Errorf("%d jobs left in the queue after retiring them all", s.Len())
	}
	s.Close()
	s = open(t, o, Config{})
	var got []string
	err := s.History(func(ad *classad.ClassAd) bool {
		ad.SetInt("ProcId", -1) // callers may modify what they get
		got = append(got, Canonical(ad))
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
		if got[i] != Canonical(ad) {
			t.Errorf("ad %d = %s\nwant %s", i, got[i], Canonical(ad))
		}
	}
	n := 0
	s.History(func(*classad.ClassAd) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("History did not stop: %d calls", n)
	}
}

func testRetireChecks(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	var txn jobqueue.Txn
	txn.NewJob(id(1, 0), JobAd(1, 0))
	commit(t, s, &txn)
	for name, build := range map[string]func(*jobqueue.Txn){
		"missing job":     func(t *jobqueue.Txn) { t.Retire(id(2, 0), JobAd(2, 0)) },
		"retired twice":   func(t *jobqueue.Txn) { t.Retire(id(1, 0), JobAd(1, 0)); t.Retire(id(1, 0), JobAd(1, 0)) },
		"set after":       func(t *jobqueue.Txn) { t.Retire(id(1, 0), JobAd(1, 0)); t.SetValue(id(1, 0), "A", classad.Int(1)) },
		"destroy, retire": func(t *jobqueue.Txn) { t.Destroy(id(1, 0)); t.Retire(id(1, 0), JobAd(1, 0)) },
	} {
		var txn jobqueue.Txn
		build(&txn)
		if err := s.Commit(context.Background(), &txn); !errors.Is(err, jobqueue.ErrNotFound) {
			t.Errorf("%s: Commit = %v, want ErrNotFound", name, err)
		}
	}
	txn = jobqueue.Txn{}
	txn.Retire(id(1, 0), nil)
	if err := s.Commit(context.Background(), &txn); err == nil {
		t.Error("a retirement without an ad committed")
	}
	n := 0
	if err := s.History(func(*classad.ClassAd) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(id(1, 0)); !ok || n != 0 {
		t.Error("a refused retirement changed the queue or the history")
	}
}

// use commits UseCluster(c, owner) with one job of the cluster.
func use(s Store, c int, owner string) error {
	var txn jobqueue.Txn
	txn.UseCluster(c, owner)
	txn.NewJob(id(c, 0), JobAd(c, 0))
	return s.Commit(context.Background(), &txn)
}

// testReservationsBelongToTheirOwner: a cluster is filled once, by the
// owner it was reserved for, never again after its jobs leave, and an open
// reservation survives restarts.
func testReservationsBelongToTheirOwner(t *testing.T, o Opener) {
	ctx := context.Background()
	s := open(t, o, Config{})
	a, err := s.NextCluster(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NextCluster(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextCluster(ctx, ""); err == nil {
		t.Error("NextCluster without an owner succeeded")
	}
	for _, tc := range []struct {
		c     int
		owner string
	}{{a, "bob"}, {b, "alice"}, {b + 100, "alice"}, {0, "alice"}, {-1, "alice"}, {a, ""}} {
		if err := use(s, tc.c, tc.owner); !errors.Is(err, jobqueue.ErrNotReserved) {
			t.Errorf("%s used cluster %d: %v, want ErrNotReserved", tc.owner, tc.c, err)
		}
	}
	if err := use(s, a, "alice"); err != nil {
		t.Fatalf("alice uses her cluster: %v", err)
	}
	if err := use(s, a, "alice"); !errors.Is(err, jobqueue.ErrNotReserved) {
		t.Errorf("alice used her cluster twice: %v", err)
	}
	ad, _ := s.Get(id(a, 0))
	var txn jobqueue.Txn
	txn.Retire(id(a, 0), ad)
	commit(t, s, &txn)
	txn = jobqueue.Txn{}
	txn.UseCluster(a, "alice")
	txn.NewJob(id(a, 1), JobAd(a, 1))
	if err := s.Commit(ctx, &txn); !errors.Is(err, jobqueue.ErrNotReserved) {
		t.Errorf("cluster %d used again after its jobs left: %v", a, err)
	}

	s.Close()
	s = open(t, o, Config{})
	if err := use(s, a, "alice"); !errors.Is(err, jobqueue.ErrNotReserved) {
		t.Errorf("after reopening: cluster %d used again: %v", a, err)
	}
	if err := use(s, b, "alice"); !errors.Is(err, jobqueue.ErrNotReserved) {
		t.Errorf("after reopening: alice used bob's cluster: %v", err)
	}
	if c, err := s.NextCluster(ctx, "carol"); err != nil || c == a || c == b {
		t.Errorf("after reopening: NextCluster = %d, %v: a number used before", c, err)
	}
	if err := use(s, b, "bob"); err != nil {
		t.Errorf("bob's reservation did not survive a restart: %v", err)
	}
}

// testReservationsBounded: an owner's reservations beyond MaxReservations
// end the oldest, before and after a restart; other owners keep theirs.
func testReservationsBounded(t *testing.T, o Opener) {
	ctx := context.Background()
	cfg := Config{MaxReservations: 3}
	s := open(t, o, cfg)
	bob, _ := s.NextCluster(ctx, "bob")
	var alice []int
	for range 5 {
		c, err := s.NextCluster(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		alice = append(alice, c)
	}
	s.Close()
	s = open(t, o, cfg)
	for i, c := range alice {
		err := use(s, c, "alice")
		if i < 2 && !errors.Is(err, jobqueue.ErrNotReserved) {
			t.Errorf("alice's reservation %d of 5 (cluster %d) is still open: %v", i+1, c, err)
		}
		if i >= 2 && err != nil {
			t.Errorf("alice's reservation %d of 5 (cluster %d): %v", i+1, c, err)
		}
	}
	if err := use(s, bob, "bob"); err != nil {
		t.Errorf("bob's reservation ended by alice's: %v", err)
	}
}

// testReservationUsedOnce races many commits that use the same
// reservation, which group commit checks together: one wins.
func testReservationUsedOnce(t *testing.T, o Opener) {
	s := open(t, o, Config{})
	c, err := s.NextCluster(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var won, lost atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			switch err := use(s, c, "alice"); {
			case err == nil:
				won.Add(1)
			case errors.Is(err, jobqueue.ErrNotReserved):
				lost.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != 31 {
		t.Errorf("%d commits used the reservation, %d were refused; want 1 and 31", won.Load(), lost.Load())
	}
}

package jobqueue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"harrier.dev/harrier/classad"
)

// crashDirEnv makes the test binary run crashChild instead of the tests.
const crashDirEnv = "HARRIER_JOBQUEUE_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild commits forever from several goroutines and prints a line for
// every call that returned successfully, after it returned:
//
//	next C      NextCluster reserved C for alice
//	new C       alice used C: jobs C.0 and C.1 were added in one transaction
//	set C N     C.0's Counter was set to N (increasing per cluster)
//	ret C       C.0 and C.1 were retired to the history in one transaction
//
// It exits with status 3 if a commit fails, or if a cluster can be used a
// second time.
func crashChild(dir string) {
	l, err := Open(dir, Options{CompactMinBytes: 32 << 10, CompactRatio: 1.5})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		mu.Unlock()
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				c, err := l.NextCluster(ctx, "alice")
				if err != nil {
					fail(err)
				}
				say("next %d", c)
				var txn Txn
				txn.UseCluster(c, "alice")
				txn.NewJob(JobID{c, 0}, jobAd(c, 0))
				txn.NewJob(JobID{c, 1}, jobAd(c, 1))
				if err := l.Commit(ctx, &txn); err != nil {
					fail(err)
				}
				say("new %d", c)
				txn = Txn{}
				txn.UseCluster(c, "alice")
				if err := l.Commit(ctx, &txn); !errors.Is(err, ErrNotReserved) {
					fail(fmt.Errorf("cluster %d used twice: %v", c, err))
				}
				for n := range 3 {
					var txn Txn
					txn.SetValue(JobID{c, 0}, "Counter", classad.Int(int64(n)))
					if err := l.Commit(ctx, &txn); err != nil {
						fail(err)
					}
					say("set %d %d", c, n)
				}
				if c%3 == 0 {
					var txn Txn
					for p := range 2 {
						ad, _ := l.Get(JobID{c, p})
						ad.SetInt("JobStatus", 4)
						txn.Retire(JobID{c, p}, ad)
					}
					if err := l.Commit(ctx, &txn); err != nil {
						fail(err)
					}
					say("ret %d", c)
				}
			}
		})
	}
	wg.Wait()
}

// TestCrashLosesNoAcknowledgedCommit SIGKILLs a committing process at
// random moments, reopens the store, and checks that every commit it
// acknowledged is there, exactly as acknowledged; that no transaction is
// half applied; that every retired job is in exactly one of the queue and
// the history, once; that no cluster number is handed out twice and no
// cluster used twice; and that a reservation not yet used survives,
// still its owner's.
func TestCrashLosesNoAcknowledgedCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	handedOut := map[int]bool{}
	created := map[int]bool{} // acknowledged "new", across rounds
	emptied := map[int]bool{} // used by this test after a kill left them open
	retired := map[int]bool{}
	counter := map[int]int{}
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements, so the kill
		// lands anywhere: in a write, an fsync, a history append, a
		// compaction.
		killAfter := 50 + rng.IntN(600)
		sc := bufio.NewScanner(stdout)
		lines := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			c, _ := strconv.Atoi(f[1])
			switch f[0] {
			case "next":
				if handedOut[c] {
					t.Fatalf("round %d: cluster %d handed out twice", round, c)
				}
				handedOut[c] = true
			case "new":
				created[c] = true
			case "set":
				n, _ := strconv.Atoi(f[2])
				counter[c] = n
			case "ret":
				retired[c] = true
			}
			if lines++; lines == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended without being killed: %v", round, err)
		}

		l := openT(t, dir, Options{})
		present := map[int]int{}
		l.Scan(func(id JobID, ad *classad.ClassAd) bool {
			present[id.Cluster]++
			if !handedOut[id.Cluster] {
				t.Errorf("round %d: job %s of a cluster never handed out", round, id)
			}
			if id.Proc == 0 {
				n, ok := ad.EvalInt("Counter")
				if want, acked := counter[id.Cluster]; acked && (!ok || int(n) < want) {
					t.Errorf("round %d: %s Counter = %d, acknowledged %d", round, id, n, want)
				}
			}
			return true
		})
		inHistory := map[JobID]int{}
		err = l.History(func(ad *classad.ClassAd) bool {
			id := jobIDOf(ad)
			inHistory[id]++
			if n, _ := ad.EvalInt("Counter"); id.Proc == 0 && n != 2 {
				t.Errorf("round %d: %s retired with Counter %d, want 2", round, id, n)
			}
			return true
		})
		if err != nil {
			t.Fatalf("round %d: History: %v", round, err)
		}
		historic := map[int]int{}
		for id, n := range inHistory {
			if n != 1 {
				t.Errorf("round %d: %s is %d times in the history", round, id, n)
			}
			historic[id.Cluster]++
		}
		for c, n := range historic {
			if n != 2 {
				t.Errorf("round %d: cluster %d has %d jobs in the history: a retirement was half applied", round, c, n)
			}
			if present[c] > 0 {
				t.Errorf("round %d: cluster %d is in both the queue and the history", round, c)
			}
		}
		for c, n := range present {
			if n != 2 {
				t.Errorf("round %d: cluster %d has %d jobs: a transaction was half applied", round, c, n)
			}
		}
		for c := range retired {
			if historic[c] == 0 {
				t.Errorf("round %d: acknowledged retirement of cluster %d is not in the history", round, c)
			}
		}
		for c := range created {
			if present[c] == 0 && historic[c] == 0 {
				t.Errorf("round %d: acknowledged cluster %d lost: in neither the queue nor the history", round, c)
			}
		}
		// What was neither acknowledged nor lost is now settled: record
		// it, so later rounds check it too.
		for c := range present {
			created[c] = true
		}
		for c := range historic {
			created[c], retired[c] = true, true
		}
		// A used cluster is never used again; a reservation the kill left
		// unused is still alice's, and only hers.
		for c := range handedOut {
			var txn Txn
			txn.UseCluster(c, "alice")
			err := l.Commit(ctx, &txn)
			switch {
			case (created[c] || emptied[c]) && !errors.Is(err, ErrNotReserved):
				t.Errorf("round %d: used cluster %d used again: %v", round, c, err)
			case !created[c] && !emptied[c]:
				var other Txn
				other.UseCluster(c, "mallory")
				if oerr := l.Commit(ctx, &other); !errors.Is(oerr, ErrNotReserved) {
					t.Errorf("round %d: mallory used alice's cluster %d: %v", round, c, oerr)
				}
				if err != nil {
					t.Errorf("round %d: alice's open reservation of cluster %d: %v", round, c, err)
				}
				emptied[c] = true
			}
		}
		l.Close()
		t.Logf("round %d: killed after %d acknowledgements, %d jobs in queue, %d in history", round, killAfter, l.Len(), len(inHistory))
	}
	// The child compacts often, so the kills also hit compactions.
	if !slices.ContainsFunc(dirNames(t, dir), func(n string) bool { return strings.HasPrefix(n, snapshotPrefix) }) {
		t.Error("no compaction happened during the crash rounds")
	}
}

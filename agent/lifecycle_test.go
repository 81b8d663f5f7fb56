package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// errCrashed is the fault a crashed store returns: from the crash on, no
// commit of the agent's reaches the disk.
var errCrashed = errors.New("agent crashed")

// lifeJob is the job every lifecycle test drives.
var lifeJob = jobqueue.JobID{Cluster: 1, Proc: 0}

// lifeScenario is one job's life, as its shadow and its user drive the
// agent through it.
type lifeScenario struct {
	name string
	// attrs are the job's own attributes (its policy).
	attrs string
	// requeues says that the job's own exit may send it back to Idle
	// (max_retries, on_exit_remove): only then may one commit record an
	// exit and make the job Idle.
	requeues bool
	drive    func(ctx context.Context, a *Agent)
}

// A fake shadow's events.
var (
	executing = shadow.Event{Type: shadow.EventExecuting}
	exit0     = shadow.Event{Type: shadow.EventExited, ExitCode: 0, UserCPU: 1.5, MaxRSS: 4096,
		Files: []shadow.FileStats{{Path: "/home/u/in", Opens: 1, Reads: 2, BytesRead: 100}}}
	exit1  = shadow.Event{Type: shadow.EventExited, ExitCode: 1}
	killed = shadow.Event{Type: shadow.EventKilled, Reason: "stopped"}
)

// runEvents has a fake shadow run the job under a new run: each event is
// applied as serveOnShadow applies its shadow's, and the first that ends the
// run is the outcome useClaim applies. It returns the run, or nil if the
// events did not end it (the caller ends it).
func runEvents(ctx context.Context, a *Agent, events ...shadow.Event) *run {
	r, err := a.newRun(lifeJob, &claim{id: "claim", slot: "slot1@execute", startdAddr: "execute:1"})
	if err != nil {
		panic(err) // a test drives one run at a time
	}
	for _, ev := range events {
		if a.progress(ctx, r, ev) {
			continue
		}
		a.finished(ctx, r, ev)
		a.endRun(r)
		return nil
	}
	return r
}

// endWith ends a run that runEvents left going.
func endWith(ctx context.Context, a *Agent, r *run, ev shadow.Event) {
	a.finished(ctx, r, ev)
	a.endRun(r)
}

// logError makes an action's refusal visible to the test; an injected
// crash is expected.
func logError(a *Agent, err error) {
	if err != nil && !errors.Is(err, errCrashed) {
		a.log.Error("scenario action", "err", err)
	}
}

var lifeScenarios = []lifeScenario{
	{name: "exit completes", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, shadow.Event{Type: shadow.EventUsage, UserCPU: 1, Memory: 1 << 20},
			shadow.Event{Type: shadow.EventCheckpointed, StoredBytes: 10}, exit0)
	}},
	{name: "exit holds", attrs: "OnExitHold = ExitCode != 0", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, exit1)
		logError(a, a.releaseBy(ctx, lifeJob, "test"))
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "exit retries", attrs: "JobMaxRetries = 2; OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode is 0", requeues: true, drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, exit1)
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "exit stays", attrs: "OnExitRemove = false", requeues: true, drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, exit0)
		logError(a, a.remove(ctx, lifeJob, "test"))
	}},
	{name: "shadow holds", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, shadow.Event{Type: shadow.EventHold, Reason: "no such program", Code: 6})
		logError(a, a.releaseBy(ctx, lifeJob, "test"))
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "shadow holds before the job starts", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, shadow.Event{Type: shadow.EventHold, Reason: "checkpoint refused", Code: 13})
		logError(a, a.releaseBy(ctx, lifeJob, "test"))
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "exit without a recorded start", attrs: "JobMaxRetries = 1; OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode is 0", requeues: true, drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, exit1)
		runEvents(ctx, a, exit0)
	}},
	{name: "evicted", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, shadow.Event{Type: shadow.EventCheckpointed, Vacate: true},
			shadow.Event{Type: shadow.EventEvicted, Reason: "owner came back", Files: exit0.Files})
		runEvents(ctx, a, shadow.Event{Type: shadow.EventExecuting, Restored: true}, exit0)
	}},
	{name: "self-checkpoints", attrs: "SuccessCheckpointExitCode = 85", drive: func(ctx context.Context, a *Agent) {
		saved := shadow.Event{Type: shadow.EventSelfCheckpointed, CheckpointFiles: 1, StoredBytes: 3}
		runEvents(ctx, a, executing, saved, saved, exit0)
	}},
	{name: "suspended", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, executing, shadow.Event{Type: shadow.EventSuspended, Reason: "owner"},
			shadow.Event{Type: shadow.EventResumed}, shadow.Event{Type: shadow.EventCheckpointFailed, Reason: "no"}, exit0)
	}},
	{name: "run fails", drive: func(ctx context.Context, a *Agent) {
		runEvents(ctx, a, shadow.Event{Type: shadow.EventFailed, Reason: "claim refused"})
		runEvents(ctx, a, executing, shadow.Event{Type: shadow.EventFailed, Reason: "starter lost"})
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "user holds, releases, removes", drive: func(ctx context.Context, a *Agent) {
		logError(a, a.hold(ctx, lifeJob, "test", holdByUser, 0))
		logError(a, a.releaseBy(ctx, lifeJob, "test"))
		logError(a, a.remove(ctx, lifeJob, "test"))
	}},
	{name: "removed while running", drive: func(ctx context.Context, a *Agent) {
		r := runEvents(ctx, a, executing)
		logError(a, a.remove(ctx, lifeJob, "test"))
		endWith(ctx, a, r, killed)
	}},
	{name: "held while running", drive: func(ctx context.Context, a *Agent) {
		r := runEvents(ctx, a, executing)
		logError(a, a.hold(ctx, lifeJob, "test", holdByUser, 0))
		endWith(ctx, a, r, killed)
		logError(a, a.releaseBy(ctx, lifeJob, "test"))
		runEvents(ctx, a, executing, exit0)
	}},
	{name: "periodic policy", attrs: "PeriodicHold = NumJobStarts == 1 && JobStatus == 2; PeriodicRelease = true; PeriodicRemove = NumJobStarts >= 2",
		drive: func(ctx context.Context, a *Agent) {
			r := runEvents(ctx, a, executing)
			a.evalPeriodic(ctx) // holds
			endWith(ctx, a, r, killed)
			a.evalPeriodic(ctx) // releases
			r = runEvents(ctx, a, executing)
			a.evalPeriodic(ctx) // removes
			endWith(ctx, a, r, killed)
		}},
}

// lifeRun is one run of a scenario, crashed at a fault point or not.
type lifeRun struct {
	dir string
	// statuses[c] is the job's state after c durable commits;
	// logged[c] the number of events its log then held (known when the
	// next commit begins, or the run ends).
	statuses []JobStatus
	logged   []int
	// durable counts the commits applied; crashedAfter says the crash
	// came once the last of them was durable, before its events.
	durable      int
	crashed      bool
	crashedAfter bool
	// exitRequeued is set by a durable commit that records an exit and
	// makes the job Idle: the job would run again.
	exitRequeued bool
}

// driveLife runs s on a fresh queue, crashing the agent at fault point
// crashAt (two per commit: before it is written, once it is durable), or
// not at all if crashAt is negative, and leaves the queue closed.
func driveLife(t *testing.T, s lifeScenario, crashAt int) *lifeRun {
	t.Helper()
	ctx := context.Background()
	lr := &lifeRun{dir: t.TempDir(), statuses: []JobStatus{Idle}}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	userLog := filepath.Join(lr.dir, "job.log")
	ad, err := classad.Parse(fmt.Sprintf(`[ ClusterId = 1; ProcId = 0; JobStatus = 1; NumJobStarts = 0; Owner = %q; Iwd = %q; UserLog = "job.log"; Requirements = true ]`,
		me.Username, lr.dir))
	if err != nil {
		t.Fatal(err)
	}
	if s.attrs != "" {
		own, err := classad.Parse("[" + s.attrs + "]")
		if err != nil {
			t.Fatal(err)
		}
		ad.Update(own)
	}
	var q *jobqueue.Log
	point := 0
	fault := func(txn *jobqueue.Txn, durable bool) error {
		if lr.crashed {
			return errCrashed
		}
		if durable {
			lr.durable++
			lr.statuses = append(lr.statuses, statusAfter(lr.statuses[len(lr.statuses)-1], txn))
			lr.exitRequeued = lr.exitRequeued || (statusAfter(0, txn) == Idle && sets(txn, AttrNumJobCompletions))
		} else {
			lr.logged = append(lr.logged, len(readLog(t, userLog)))
		}
		if point == crashAt {
			lr.crashed, lr.crashedAfter = true, durable
			return errCrashed
		}
		point++
		return nil
	}
	q, err = jobqueue.Open(filepath.Join(lr.dir, "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	txn := &jobqueue.Txn{}
	txn.NewJob(lifeJob, ad)
	if err := q.Commit(ctx, txn); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q, err = jobqueue.Open(filepath.Join(lr.dir, "queue"), jobqueue.Options{NoSync: true, Fault: fault})
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAgent(t, q)
	if err := a.recover(ctx); err != nil {
		t.Fatal(err)
	}
	s.drive(ctx, a)
	// The agent is abandoned here, crashed or not: what it committed is
	// all that is left of it.
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if !lr.crashed {
		lr.logged = append(lr.logged, len(readLog(t, userLog)))
	}
	return lr
}

// newTestAgent returns an agent over q that is not served: tests call
// its methods as its services and shadows would.
func newTestAgent(t *testing.T, q Queue) *Agent {
	t.Helper()
	a, err := New(Config{Name: "agent@test", Queue: q, ShadowCommand: []string{"shadow"},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// statusAfter is the job's state after txn, given its state before.
func statusAfter(before JobStatus, txn *jobqueue.Txn) JobStatus {
	st := before
	for _, op := range txn.Ops() {
		if op.Job() != lifeJob {
			continue
		}
		switch op.Kind() {
		case jobqueue.OpSet:
			if op.Name() == AttrJobStatus {
				v, _ := op.Expr().AsLiteral()
				n, _ := v.IntValue()
				st = JobStatus(n)
			}
		case jobqueue.OpRetire:
			st = statusOf(op.Ad())
		}
	}
	return st
}

// sets reports whether txn sets attribute name of the job.
func sets(txn *jobqueue.Txn, name string) bool {
	for _, op := range txn.Ops() {
		if op.Job() == lifeJob && op.Kind() == jobqueue.OpSet && op.Name() == name {
			return true
		}
	}
	return false
}

// readLog returns the types of the events in the job's event log.
func readLog(t *testing.T, path string) []joblog.Type {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := joblog.Read(f)
	if err != nil {
		t.Fatalf("read job event log: %v", err)
	}
	types := make([]joblog.Type, len(evs))
	for i, e := range evs {
		types[i] = e.Type
	}
	return types
}

// TestCrashBetweenSteps kills the agent at every step of every move of
// each scenario (before each commit and after it, before its events are
// written), restarts it on what reached the disk, and checks that each
// move was all or nothing: the job is in the queue or the history, once;
// its state is one it had between moves (a running job requeued by the
// restart); a job whose exit is durable is not Idle to run again unless
// its own policy says so; and its event log tells of durable moves only,
// each once, missing at most the events of the move the crash cut.
func TestCrashBetweenSteps(t *testing.T) {
	for _, s := range lifeScenarios {
		t.Run(s.name, func(t *testing.T) {
			clean := driveLife(t, s, -1)
			if clean.crashed {
				t.Fatal("the clean run crashed")
			}
			cleanLog := readLog(t, filepath.Join(clean.dir, "job.log"))
			points := 2 * clean.durable
			for k := range points {
				lr := driveLife(t, s, k)
				if !slices.Equal(lr.statuses, clean.statuses[:len(lr.statuses)]) {
					t.Fatalf("crash at %d: the run took other moves than the clean run: %v, clean %v", k, lr.statuses, clean.statuses)
				}
				checkRestart(t, s, k, lr, cleanLog)
			}
		})
	}
}

// checkRestart reopens a crashed run's queue under a new agent and checks
// what it recovers.
func checkRestart(t *testing.T, s lifeScenario, k int, lr *lifeRun, cleanLog []joblog.Type) {
	t.Helper()
	userLog := filepath.Join(lr.dir, "job.log")
	// The log as the crash left it: the events of every durable move, in
	// order, but the crashed move's own.
	want := lr.logged[len(lr.logged)-1]
	if lr.crashedAfter {
		want = lr.logged[lr.durable-1]
	}
	if got := readLog(t, userLog); !slices.Equal(got, cleanLog[:want]) {
		t.Errorf("crash at %d (%d commits durable): log %v, want %v", k, lr.durable, got, cleanLog[:want])
	}

	q, err := jobqueue.Open(filepath.Join(lr.dir, "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a := newTestAgent(t, q)
	if err := a.recover(context.Background()); err != nil {
		t.Fatalf("crash at %d: recover: %v", k, err)
	}
	ad, queued := q.Get(lifeJob)
	var history []*classad.ClassAd
	if err := q.History(func(h *classad.ClassAd) bool {
		if jobID(h) == lifeJob {
			history = append(history, h)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	switch {
	case queued && len(history) > 0:
		t.Fatalf("crash at %d: job both in the queue and in the history", k)
	case !queued && len(history) != 1:
		t.Fatalf("crash at %d: job in the history %d times and not in the queue", k, len(history))
	case !queued:
		ad = history[0]
	}
	was := lr.statuses[lr.durable]
	wantStatus := was
	if was.runs() {
		wantStatus = Idle
	}
	got := statusOf(ad)
	if got != wantStatus {
		t.Errorf("crash at %d (%d commits durable, job was %s): restarted %s, want %s", k, lr.durable, was, got, wantStatus)
	}
	if lr.exitRequeued && !s.requeues {
		t.Errorf("crash at %d: a commit made the job Idle with its exit: it would run twice", k)
	}
	evs := readLog(t, userLog)
	if n, _ := ad.EvalInt(AttrNumJobCompletions); int64(count(evs, joblog.Terminated)) > n {
		t.Errorf("crash at %d: %d terminated events for %d durable exits", k, count(evs, joblog.Terminated), n)
	}
	if was.runs() && (len(evs) == 0 || evs[len(evs)-1] != joblog.Evicted) {
		t.Errorf("crash at %d: a job that was running is not logged as evicted on restart: %v", k, evs)
	}
}

func count(evs []joblog.Type, typ joblog.Type) int {
	n := 0
	for _, e := range evs {
		if e == typ {
			n++
		}
	}
	return n
}

// The lifecycle refuses moves it does not have, with an error naming both
// states, and commits nothing for them.
func TestIllegalMoveRefused(t *testing.T) {
	q, err := jobqueue.Open(filepath.Join(t.TempDir(), "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ad, _ := classad.Parse(`[ ClusterId = 1; ProcId = 0; JobStatus = 5 ]`)
	txn := &jobqueue.Txn{}
	txn.NewJob(lifeJob, ad)
	if err := q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	a := newTestAgent(t, q)
	_, err = a.jobs.apply(context.Background(), lifeJob, func(*classad.ClassAd) (step, error) {
		return step{to: Running}, nil
	})
	var te *TransitionError
	if !errors.Is(err, ErrIllegalTransition) || !errors.As(err, &te) || te.From != Held || te.To != Running {
		t.Fatalf("Held to Running: %v, want a TransitionError from Held to Running", err)
	}
	if st := a.jobs.status(lifeJob); st != Held {
		t.Errorf("job is %s after a refused move, want Held", st)
	}
	for _, m := range []struct {
		from, to JobStatus
		ok       bool
	}{
		{Idle, Running, true}, {Running, Held, true}, {Running, Completed, true}, {Held, Idle, true},
		{Held, Removed, true}, {Suspended, Idle, true},
		{Idle, Completed, true}, {Held, Completed, false}, {Completed, Idle, false}, {Removed, Idle, false},
		{Idle, Suspended, false}, {Held, Running, false}, {Idle, Idle, false},
	} {
		if got := m.to.follows(m.from); got != m.ok {
			t.Errorf("%s to %s allowed %v, want %v", m.from, m.to, got, m.ok)
		}
	}
}

// An exit by a signal leaves no exit code behind from an earlier run, and
// an exit with a code no signal: the job's policy reads this run's exit.
func TestExitReplacesTheLastRunsExit(t *testing.T) {
	ad := classad.New()
	ad.SetInt(AttrJobStatus, int64(Running))
	ad.SetInt(AttrExitCode, 0)
	policy, err := classad.ParseExpr("ExitCode is 0")
	if err != nil {
		t.Fatal(err)
	}
	ad.Set(AttrOnExitRemove, policy)
	if st := exited(ad, shadow.Event{Type: shadow.EventExited, BySignal: true, Signal: 9}); st.to != Idle {
		t.Errorf("a run killed by signal 9 after one that exited 0 moves the job to %v, want Idle (it runs again)", st.to)
	}
	if v := ad.Eval(AttrExitCode); v.Kind() != classad.UndefinedKind {
		t.Errorf("ExitCode after an exit by signal: %v, want undefined", v)
	}
	if st := exited(ad, shadow.Event{Type: shadow.EventExited, ExitCode: 0}); st.to != Completed {
		t.Errorf("an exit 0 moves the job to %v, want Completed", st.to)
	}
	if v := ad.Eval(AttrExitSignal); v.Kind() != classad.UndefinedKind {
		t.Errorf("ExitSignal after an exit with a code: %v, want undefined", v)
	}
}

// TestOnExitHoldReasonAndSubCode: an exit that on_exit_hold holds gets the
// job's on_exit_hold_reason and on_exit_hold_subcode, evaluated after the
// exit, or else HTCondor's reason naming the expression and subcode 0.
func TestOnExitHoldReasonAndSubCode(t *testing.T) {
	for _, tc := range []struct {
		attrs, reason string
		subcode       int64
	}{
		{`OnExitHold = ExitCode != 0; OnExitHoldReason = strcat("exited with ", ExitCode); OnExitHoldSubCode = ExitCode + 40`, "exited with 3", 43},
		{`OnExitHold = ExitCode != 0`, "The job attribute OnExitHold expression 'ExitCode != 0' evaluated to TRUE", 0},
	} {
		ad, err := classad.Parse("[ JobStatus = 2; " + tc.attrs + " ]")
		if err != nil {
			t.Fatal(err)
		}
		st := exited(ad, shadow.Event{Type: shadow.EventExited, ExitCode: 3})
		reason, _ := st.set[AttrHoldReason].StringValue()
		code, _ := st.set[AttrHoldReasonCode].IntValue()
		subcode, _ := st.set[AttrHoldReasonSubCode].IntValue()
		if st.to != Held || reason != tc.reason || code != holdByJobPolicy || subcode != tc.subcode {
			t.Errorf("%s: exit 3 gives %v, %q, code %d, subcode %d; want held, %q, code %d, subcode %d",
				tc.attrs, st.to, reason, code, subcode, tc.reason, holdByJobPolicy, tc.subcode)
		}
	}
}

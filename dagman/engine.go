package dagman

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"harrier.dev/harrier/joblog"
)

// ErrRemoved, as the cause of Run's context's cancellation
// (context.WithCancelCause), removes the DAG: its node jobs are removed and
// a rescue DAG is written, as condor_rm of condor_dagman does. Any other
// cancellation stops Run as a crash would, leaving the jobs queued and the
// lock file behind, so that the next Run recovers.
var ErrRemoved = errors.New("DAG removed")

// ErrRunning is returned by Run when another process runs the DAG.
var ErrRunning = errors.New("the DAG is already running")

// Options are condor_dagman's command-line settings.
type Options struct {
	// MaxJobs, MaxIdle, MaxPre and MaxPost are -maxjobs, -maxidle,
	// -maxpre and -maxpost: node jobs queued, job procs idle, PRE and
	// POST scripts running at once. Zero takes the CONFIG file's
	// DAGMAN_MAX_JOBS_SUBMITTED, DAGMAN_MAX_JOBS_IDLE,
	// DAGMAN_MAX_PRE_SCRIPTS and DAGMAN_MAX_POST_SCRIPTS, whose defaults
	// are HTCondor's (no limit, 1000, 20, 20); a configured 0 is no limit.
	MaxJobs, MaxIdle, MaxPre, MaxPost int
	// PollInterval is how often the nodes log is read when the Submitter
	// is no Notifier, besides each time the kernel reports it written;
	// zero takes DAGMAN_USER_LOG_SCAN_INTERVAL (5s).
	PollInterval time.Duration
	// NoRescue runs the DAG file as it is even if rescue DAGs exist
	// (-autorescue 0); DoRescueFrom applies that rescue DAG rather than
	// the newest (-dorescuefrom).
	NoRescue     bool
	DoRescueFrom int
	// AlwaysRunPost runs a node's POST script after its PRE script failed
	// (DAGMAN_ALWAYS_RUN_POST), with $RETURN -1004.
	AlwaysRunPost bool
}

// Result is how a DAG ended.
type Result struct {
	Status DAGStatus
	// ExitCode is condor_dagman's: 0 for success, 1 for failed nodes,
	// ABORT-DAG-ON's RETURN value for an abort, 2 for a removal.
	ExitCode int
	// Done, Failed and Futile count nodes (the FINAL node included).
	Done, Failed, Futile int
	// Rescue is the rescue DAG written, "" if none.
	Rescue string
	// Recovered reports that the run resumed a crashed one from the log.
	Recovered bool
	// Stopped reports that the run was cancelled without removal.
	Stopped bool
}

// Run runs dag to its end, submitting node jobs with sub, and returns how
// it ended; an error means the DAG could not be run or followed (another
// process runs it, its files cannot be written). Run applies the newest
// rescue DAG unless told otherwise, and recovers from the nodes log if the
// lock file says a previous run died.
func Run(ctx context.Context, dag *DAG, sub Submitter, opts Options) (Result, error) {
	lk, recovering, err := lock(dag.File + ".lock")
	if err != nil {
		return Result{}, err
	}
	e, err := newEngine(dag, sub, opts)
	if err != nil {
		// Nothing ran: a recovery still to be done stays to be done.
		lk.release(!recovering)
		return Result{}, err
	}
	defer e.out.close()
	e.lock = lk
	res, err := e.run(ctx, recovering)
	// The lock file stays after a stop or a failure once jobs may have
	// been queued, so that the next run recovers.
	lk.release(err == nil && !res.Stopped || err != nil && !e.started && !recovering)
	return res, err
}

// nodeState is what the engine knows of one node.
type nodeState struct {
	status  Status
	waiting int // parents not yet done
	retry   int // tries before the current one

	preDone   bool // this try's PRE script succeeded: submit next
	preReturn int  // this try's PRE script's exit, -1 if none ran

	cluster    int
	procs      []procState
	procsLeft  int
	removing   bool // Remove asked for the rest of the cluster
	jobFailed  bool
	jobReturn  int
	postQueued bool // waiting for a POST slot, or (replay) for its event
	seq        uint64
	why        string // why the node failed, for the status file
}

type procState uint8

const (
	procIdle procState = iota
	procRunning
	procHeld
	procGone
)

// scriptKind names which of a node's scripts ran.
type scriptKind uint8

const (
	preScript scriptKind = iota
	postScript
	holdScript
)

func (k scriptKind) String() string { return [...]string{"PRE", "POST", "HOLD"}[k] }

type scriptResult struct {
	node  int
	kind  scriptKind
	exit  int // exit status, or minus the signal that killed it
	err   error
	rerun bool // a DEFER wait ended: run the script again
}

type engine struct {
	dag   *DAG
	sub   Submitter
	opts  Options
	lock  *dagLock
	nodes []nodeState
	out   *outLog
	tail  *logTail
	// nodesLog is the job event log of all node jobs.
	nodesLog string

	byCluster map[int]int
	preQ      nodeHeap
	subQ      map[string]*nodeHeap // by category
	postQ     []int
	seq       uint64
	noopSeq   int

	// Counts the throttles need.
	jobs, idle, pre, post int
	catJobs               map[string]int
	// active counts nodes (not SERVICE nodes) with a script running or
	// waiting to rerun, or a job queued.
	active int

	failed       int
	aborting     bool
	abortReturn  int
	finalStarted bool
	replaying    bool
	started      bool // nodes may have been submitted
	recovered    bool
	premarked    int // nodes done before the run (DONE, rescue DAG)

	scripts    sync.WaitGroup
	scriptDone chan scriptResult
	stop       chan struct{} // closed when run returns, for waiting script goroutines

	// submitted counts the node jobs this run queued, and submitting the
	// time it spent in the Submitter queueing them.
	submitted  int
	submitting time.Duration
	// waitingSince is when nodes ready to be submitted started waiting
	// for a fuller batch (zero: none wait).
	waitingSince time.Time

	statusAt time.Time // last node status file write
	dotAt    time.Time // last DOT file write
	dotSeq   int       // the next DOT file's number (DONT-OVERWRITE)
	dirty    bool      // something changed since
}

func newEngine(dag *DAG, sub Submitter, opts Options) (*engine, error) {
	opts, err := withConfig(dag, opts)
	if err != nil {
		return nil, err
	}
	out, err := openOutLog(dag.File + ".dagman.out")
	if err != nil {
		return nil, err
	}
	e := &engine{
		dag: dag, sub: sub, opts: opts, out: out,
		nodes:      make([]nodeState, len(dag.Nodes)),
		nodesLog:   dag.File + ".nodes.log",
		byCluster:  make(map[int]int),
		subQ:       make(map[string]*nodeHeap),
		catJobs:    make(map[string]int),
		scriptDone: make(chan scriptResult, 16),
		stop:       make(chan struct{}),
	}
	e.tail = &logTail{path: e.nodesLog}
	return e, nil
}

func (e *engine) run(ctx context.Context, recovering bool) (Result, error) {
	defer func() {
		close(e.stop)
		e.scripts.Wait()
		e.tail.close()
	}()
	e.out.logf("******************************************************")
	e.out.logf("** condor_dagman (Harrier) STARTING UP, pid %d", os.Getpid())
	e.out.logf("DAG file %s: %d nodes, %d edges, parsed in %v", e.dag.File, len(e.dag.Nodes), e.dag.Edges, e.dag.ParseTime.Round(time.Millisecond))
	e.out.logf("Limits: maxjobs %d, maxidle %d, maxpre %d, maxpost %d", e.opts.MaxJobs, e.opts.MaxIdle, e.opts.MaxPre, e.opts.MaxPost)
	rescue, err := e.applyRescue()
	if err != nil {
		return Result{}, err
	}
	// Replaying, the log decides the queues: they are built after it.
	e.replaying = recovering
	e.initial()
	if recovering {
		e.out.logf("Lock file found: the previous run died; running in recovery mode")
		if err := e.replay(ctx); err != nil {
			return Result{}, err
		}
		e.recovered = true
	} else {
		if rescue != "" {
			e.out.logf("Applied rescue DAG %s", rescue)
		}
		// A fresh run starts a fresh log, as condor_dagman truncates its
		// nodes log.
		if err := os.WriteFile(e.nodesLog, nil, 0o644); err != nil {
			return Result{}, fmt.Errorf("truncate the nodes log: %w", err)
		}
	}
	// Only now may a crash send the next run into recovery: a fresh
	// run's log is empty by this line, not a finished run's.
	if err := e.lock.mark(); err != nil {
		return Result{}, err
	}
	e.started = true
	if err := writeDot(e, true); err != nil {
		return Result{}, err
	}
	var wake <-chan struct{}
	if n, ok := e.sub.(Notifier); ok {
		wake = n.Notify()
	} else if w, err := watchLog(e.nodesLog); err != nil {
		e.out.logf("WARNING: %v; reading it every %v", err, e.opts.PollInterval)
	} else {
		defer w.close()
		wake = w.wake
	}
	tick := time.NewTicker(e.opts.PollInterval)
	defer tick.Stop()
	for {
		if err := e.readLog(ctx); err != nil {
			return Result{}, err
		}
		more := e.dispatch(ctx)
		if e.finished() {
			if e.dag.Final == nil || e.finalStarted {
				break
			}
			e.startFinal()
			continue
		}
		if err := e.writeOutputs(false); err != nil {
			return Result{}, err
		}
		e.out.flush()
		if more {
			select {
			case <-ctx.Done():
				return e.cancelled(ctx)
			default:
				continue
			}
		}
		select {
		case r := <-e.scriptDone:
			e.scriptFinished(ctx, r)
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return e.cancelled(ctx)
		}
	}
	return e.end(ctx)
}

// initial sets every node's first state from the DAG and the rescue DAG.
func (e *engine) initial() {
	for i, n := range e.dag.Nodes {
		st := &e.nodes[i]
		st.preReturn = -1
		if n.Done || st.status == StatusDone {
			st.status = StatusDone
			e.premarked++
		}
	}
	for i, n := range e.dag.Nodes {
		st := &e.nodes[i]
		if st.status == StatusDone {
			continue
		}
		for _, p := range n.Parents {
			if e.nodes[p.index].status != StatusDone {
				st.waiting++
			}
		}
		if st.waiting == 0 && n.Kind != FinalNode {
			e.makeReady(i)
		}
	}
}

// makeReady queues a node for its PRE script or its submission; while the
// log is replayed it only records the state, and the queues are built
// afterwards.
func (e *engine) makeReady(i int) {
	st := &e.nodes[i]
	st.status = StatusReady
	e.dirty = true
	if e.replaying {
		return
	}
	e.seq++
	st.seq = e.seq
	n := e.dag.Nodes[i]
	if n.Pre != nil && !st.preDone {
		e.preQ.push(e, i)
		return
	}
	q := e.subQ[n.Category]
	if q == nil {
		q = &nodeHeap{}
		e.subQ[n.Category] = q
	}
	q.push(e, i)
}

// dispatch starts what the throttles allow: POST scripts first (they
// finish nodes), then PRE scripts, then submissions in priority order. It
// reports whether it stopped with submissions left that the throttles
// allow, so that the loop comes back at once.
func (e *engine) dispatch(ctx context.Context) bool {
	for len(e.postQ) > 0 && under(e.post, e.opts.MaxPost) {
		i := e.postQ[0]
		e.postQ = e.postQ[1:]
		e.nodes[i].postQueued = false
		e.startScript(ctx, i, postScript)
	}
	for e.preQ.Len() > 0 && under(e.pre, e.opts.MaxPre) {
		i := e.preQ.pop(e)
		if e.skip(i) {
			continue
		}
		e.activate(i)
		e.nodes[i].status = StatusPreRun
		e.startScript(ctx, i, preScript)
	}
	const perCycle = 100 // DAGMAN_MAX_SUBMITS_PER_INTERVAL: read the log between batches
	var batch []int
	more := false
	for n := 0; under(e.jobs, e.opts.MaxJobs) && under(e.idle, e.opts.MaxIdle); n++ {
		i := e.nextSubmit()
		if i < 0 {
			break
		}
		if n == perCycle {
			e.subQ[e.dag.Nodes[i].Category].push(e, i)
			more = true
			break
		}
		if e.skip(i) {
			continue
		}
		if e.dag.Nodes[i].Noop {
			e.submitNoop(i)
			continue
		}
		e.hold(i)
		batch = append(batch, i)
	}
	if !more && e.wait(len(batch)) {
		for _, i := range batch {
			e.unhold(i)
		}
		return false
	}
	e.waitingSince = time.Time{}
	e.submit(ctx, batch)
	return more
}

// Submitting a few nodes costs a Submitter about what submitting many
// does (a round trip and a durable commit): while the pool has plenty of
// the DAG's jobs idle, nodes made ready one by one as jobs end are
// gathered into batches.
const (
	fullBatch   = 32          // nodes that are worth a submission
	idleReserve = 100         // idle node jobs that keep the pool busy meanwhile
	maxWait     = time.Second // the longest a ready node waits for others
)

// wait reports whether n nodes held for submission wait for more, and
// notes since when they wait.
func (e *engine) wait(n int) bool {
	if n == 0 || n >= fullBatch || e.idle-n < idleReserve {
		return false
	}
	if e.waitingSince.IsZero() {
		e.waitingSince = time.Now()
	}
	return time.Since(e.waitingSince) < maxWait
}

// skip reports whether a queued node is no longer to run: the DAG is
// aborting (all but the FINAL node stay unrun).
func (e *engine) skip(i int) bool {
	return e.aborting && e.dag.Nodes[i].Kind != FinalNode
}

// nextSubmit takes the best ready node whose category has room, or -1.
func (e *engine) nextSubmit() int {
	var best *nodeHeap
	for cat, q := range e.subQ {
		if q.Len() == 0 {
			continue
		}
		if max, ok := e.dag.MaxJobs[cat]; ok && max > 0 && e.catJobs[cat] >= max {
			continue
		}
		if best == nil || e.before(q.top(), best.top()) {
			best = q
		}
	}
	if best == nil {
		return -1
	}
	return best.pop(e)
}

// before orders ready nodes: higher PRIORITY first, then first ready.
func (e *engine) before(a, b int) bool {
	pa, pb := e.dag.Nodes[a].Priority, e.dag.Nodes[b].Priority
	if pa != pb {
		return pa > pb
	}
	return e.nodes[a].seq < e.nodes[b].seq
}

func under(n, limit int) bool { return limit <= 0 || n < limit }

// submitNoop records a NOOP node's job as done at once, with the events
// condor_dagman writes for it.
func (e *engine) submitNoop(i int) {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	e.activate(i)
	st.status = StatusSubmitted
	e.dirty = true
	e.noopSeq--
	cluster := e.noopSeq
	now := time.Now()
	if err := joblog.Append(e.nodesLog, joblog.Event{Type: joblog.Submit, Cluster: cluster, Time: now, Host: "dummy-submit-for-noop-job", DAGNode: n.Name}); err != nil {
		e.out.logf("ERROR: writing the NOOP events of node %s: %v", n.Name, err)
	}
	if err := joblog.Append(e.nodesLog, joblog.Event{Type: joblog.Terminated, Cluster: cluster, Time: now, Normal: true}); err != nil {
		e.out.logf("ERROR: writing the NOOP events of node %s: %v", n.Name, err)
	}
	e.out.logf("Node %s is NOOP: not submitted", n.Name)
	e.bind(i, cluster, 1)
}

// hold takes a node to be submitted in this cycle's batch out of the
// ready ones, and counts its job (one idle proc, until the submission
// says how many) against the throttles while the batch is built.
func (e *engine) hold(i int) {
	e.activate(i)
	e.nodes[i].status = StatusSubmitted
	e.dirty = true
	e.jobs++
	e.idle++
	e.catJobs[e.dag.Nodes[i].Category]++
}

// unhold puts a held node back among the ready ones, as it was.
func (e *engine) unhold(i int) {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	st.status = StatusReady
	if n.Kind != ServiceNode {
		e.active--
	}
	e.jobs--
	e.idle--
	e.catJobs[n.Category]--
	e.subQ[n.Category].push(e, i)
}

// submit queues the jobs of the nodes held for this cycle, in one batch
// if the Submitter takes batches.
func (e *engine) submit(ctx context.Context, nodes []int) {
	if len(nodes) == 0 {
		return
	}
	jobs := make([]Job, len(nodes))
	for k, i := range nodes {
		jobs[k] = e.job(i)
		e.out.logf("Submitting HTCondor Node %s job(s)...", jobs[k].Node)
	}
	var res []Submitted
	start := time.Now()
	defer func() { e.submitting += time.Since(start) }()
	if b, ok := e.sub.(BatchSubmitter); ok {
		res = b.SubmitBatch(ctx, jobs)
	} else {
		res = make([]Submitted, len(jobs))
		for k, j := range jobs {
			r := &res[k]
			r.Cluster, r.Procs, r.Err = e.sub.Submit(ctx, j)
		}
	}
	for k, i := range nodes {
		n, st := e.dag.Nodes[i], &e.nodes[i]
		// Counted as held; bind or the failure counts it again.
		e.jobs--
		e.idle--
		e.catJobs[n.Category]--
		r := res[k]
		if r.Err != nil || r.Procs <= 0 {
			err := r.Err
			if err == nil {
				err = errors.New("the submit file queued no job")
			}
			e.out.logf("ERROR: submitting node %s: %v", n.Name, err)
			st.why = "submit failed: " + err.Error()
			e.jobs++
			e.catJobs[n.Category]++
			st.jobFailed, st.jobReturn = true, -1
			e.jobFinished(i)
			continue
		}
		e.out.logf("\tassigned HTCondor ID (%d.0.0) to node %s", r.Cluster, n.Name)
		e.submitted++
		e.bind(i, r.Cluster, r.Procs)
	}
}

// job is what the Submitter needs to queue node i's job.
func (e *engine) job(i int) Job {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	j := Job{Node: n.Name, File: n.File, SubDAG: n.Kind == SubDAGNode, Dir: n.Dir, Log: e.nodesLog,
		Priority: n.Priority, Retry: st.retry}
	// The submit file sees $(JOB) and $(RETRY), and a FINAL node's
	// $(DAG_STATUS) and $(FAILED_COUNT), as condor_dagman sets them.
	j.Vars = append(j.Vars, Var{Name: "JOB", Value: n.Name}, Var{Name: "RETRY", Value: strconv.Itoa(st.retry)})
	if n.Kind == FinalNode {
		j.Vars = append(j.Vars, Var{Name: "DAG_STATUS", Value: strconv.Itoa(int(e.dagStatus()))},
			Var{Name: "FAILED_COUNT", Value: strconv.Itoa(e.failed)})
	}
	for _, v := range n.Vars {
		v.Value = expandVar(v.Value, n.Name, st.retry)
		j.Vars = append(j.Vars, v)
	}
	return j
}

// activate counts a node that leaves the ready state for a script or a
// job, until result settles it. SERVICE nodes do not hold the DAG up.
func (e *engine) activate(i int) {
	switch e.nodes[i].status {
	case StatusNotReady, StatusReady:
		if e.dag.Nodes[i].Kind != ServiceNode {
			e.active++
		}
	}
}

// bind records that a node's job is queued as cluster with procs procs,
// all idle.
func (e *engine) bind(i, cluster, procs int) {
	st := &e.nodes[i]
	st.status = StatusSubmitted
	st.cluster, st.procsLeft, st.removing = cluster, procs, false
	st.jobFailed, st.jobReturn = false, 0
	st.procs = make([]procState, procs)
	e.byCluster[cluster] = i
	e.jobs++
	e.idle += procs
	e.catJobs[e.dag.Nodes[i].Category]++
	e.dirty = true
}

// readLog applies the events appended to the nodes log since last read.
func (e *engine) readLog(ctx context.Context) error {
	return e.tail.read(func(ev joblog.Event) { e.event(ctx, ev) })
}

// event applies one event of the nodes log.
func (e *engine) event(ctx context.Context, ev joblog.Event) {
	switch ev.Type {
	case joblog.PostScriptTerminated, joblog.PreSkip:
		// Written by the engine itself; they matter only in recovery.
		if e.replaying {
			e.replayScriptEvent(ev)
		}
		return
	case joblog.Submit:
		if i, ok := e.byCluster[ev.Cluster]; ok {
			if e.replaying {
				// One submit event per proc: count them.
				st := &e.nodes[i]
				st.procs = append(st.procs, procIdle)
				st.procsLeft++
				e.idle++
			}
			return
		}
		if !e.replaying || ev.DAGNode == "" {
			return
		}
		n := e.dag.Node(ev.DAGNode)
		if n == nil {
			e.out.logf("WARNING: the log names node %s, which the DAG does not have", ev.DAGNode)
			return
		}
		e.activate(n.index)
		e.bind(n.index, ev.Cluster, 1)
		return
	}
	i, ok := e.byCluster[ev.Cluster]
	if !ok || ev.Proc < 0 || ev.Proc >= len(e.nodes[i].procs) {
		return
	}
	n, st := e.dag.Nodes[i], &e.nodes[i]
	ps := &st.procs[ev.Proc]
	if *ps == procGone {
		return
	}
	switch ev.Type {
	case joblog.Execute:
		if *ps == procIdle {
			e.idle--
		}
		*ps = procRunning
	case joblog.Evicted, joblog.Released:
		if *ps != procIdle {
			e.idle++
		}
		*ps = procIdle
	case joblog.Held:
		if *ps == procIdle {
			e.idle--
		}
		*ps = procHeld
		e.out.logf("Event: ULOG_JOB_HELD for HTCondor Node %s (%d.%d.0): %s", n.Name, ev.Cluster, ev.Proc, ev.Reason)
		if n.Hold != nil && !e.replaying {
			e.startScript(ctx, i, holdScript)
		}
	case joblog.Terminated, joblog.Aborted:
		if *ps == procIdle {
			e.idle--
		}
		*ps = procGone
		st.procsLeft--
		ok := ev.Type == joblog.Terminated && ev.Normal && ev.ReturnValue == 0
		if !ok && !st.jobFailed {
			st.jobFailed = true
			switch {
			case ev.Type == joblog.Aborted:
				st.jobReturn, st.why = -1, "job removed: "+ev.Reason
			case ev.Normal:
				st.jobReturn, st.why = ev.ReturnValue, fmt.Sprintf("job proc (%d.%d.0) failed with status %d", ev.Cluster, ev.Proc, ev.ReturnValue)
			default:
				st.jobReturn, st.why = -ev.Signal, fmt.Sprintf("job proc (%d.%d.0) failed with signal %d", ev.Cluster, ev.Proc, ev.Signal)
			}
		}
		e.out.logf("Event: %s for HTCondor Node %s (%d.%d.0)", eventName(ev.Type), n.Name, ev.Cluster, ev.Proc)
		if st.procsLeft == 0 {
			e.jobFinished(i)
		} else if st.jobFailed && !st.removing && !e.replaying {
			// One failed proc fails the node: the rest are removed.
			st.removing = true
			if err := e.sub.Remove(ctx, st.cluster); err != nil {
				e.out.logf("ERROR: removing the rest of node %s's cluster %d: %v", n.Name, st.cluster, err)
			}
		}
	}
	e.dirty = true
}

func eventName(t joblog.Type) string {
	if t == joblog.Aborted {
		return "ULOG_JOB_ABORTED"
	}
	return "ULOG_JOB_TERMINATED"
}

// jobFinished moves a node whose job has ended to its POST script, or to
// its result.
func (e *engine) jobFinished(i int) {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	delete(e.byCluster, st.cluster)
	e.jobs--
	e.catJobs[n.Category]--
	if st.jobFailed {
		e.out.logf("Node %s job failed: %s", n.Name, st.why)
	} else {
		e.out.logf("Node %s job completed", n.Name)
	}
	if n.Post != nil {
		st.status = StatusPostRun
		st.postQueued = true
		if !e.replaying {
			e.postQ = append(e.postQ, i)
		}
		return
	}
	e.result(i, !st.jobFailed, st.jobReturn)
}

// result settles a node's try: done, retried, or failed with its
// descendants made futile. exit is the value ABORT-DAG-ON and
// UNLESS-EXIT look at: the POST script's, else the job's or PRE script's.
func (e *engine) result(i int, ok bool, exit int) {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	if n.Kind != ServiceNode {
		e.active--
	}
	e.dirty = true
	if a := n.AbortOn; a != nil && exit == a.Value && !e.aborting {
		e.out.logf("Aborting DAG because node %s exited with value %d (ABORT-DAG-ON), returning %d", n.Name, exit, a.Return)
		e.aborting, e.abortReturn = true, a.Return
		if !e.replaying {
			e.removeAll(context.Background())
		}
	}
	if ok {
		st.status = StatusDone
		e.out.logf("Node %s succeeded", n.Name)
		for _, c := range n.Children {
			cs := &e.nodes[c.index]
			cs.waiting--
			if cs.waiting == 0 && cs.status == StatusNotReady {
				e.makeReady(c.index)
			}
		}
		return
	}
	if st.retry < n.Retries && (n.UnlessExit == nil || exit != *n.UnlessExit) && !e.aborting {
		st.retry++
		st.preDone, st.preReturn = false, -1
		e.out.logf("Node %s failed; retrying it (retry %d of %d)", n.Name, st.retry, n.Retries)
		e.makeReady(i)
		return
	}
	st.status = StatusError
	if n.Kind != ServiceNode {
		e.failed++ // a SERVICE node's result is not the DAG's
	}
	e.out.logf("Node %s failed: %s", n.Name, st.why)
	// Descendants never run.
	work := append([]*Node(nil), n.Children...)
	for len(work) > 0 {
		c := work[len(work)-1]
		work = work[:len(work)-1]
		if cs := &e.nodes[c.index]; cs.status == StatusNotReady {
			cs.status = StatusFutile
			work = append(work, c.Children...)
		}
	}
}

// removeAll removes every queued node job (an abort or a removal).
func (e *engine) removeAll(ctx context.Context) {
	for cluster, i := range e.byCluster {
		if cluster < 0 {
			continue // NOOP
		}
		if err := e.sub.Remove(ctx, cluster); err != nil {
			e.out.logf("ERROR: removing node %s's cluster %d: %v", e.dag.Nodes[i].Name, cluster, err)
		}
		e.nodes[i].removing = true
	}
}

// finished reports whether nothing is running or can start, but the FINAL
// node.
func (e *engine) finished() bool {
	if e.active > 0 || len(e.postQ) > 0 {
		return false
	}
	if e.aborting {
		return true
	}
	if e.preQ.Len() > 0 {
		return false
	}
	for cat, q := range e.subQ {
		if q.Len() > 0 {
			// A category throttled to 0 never runs; its nodes stay.
			if max, ok := e.dag.MaxJobs[cat]; ok && max == 0 {
				continue
			}
			return false
		}
	}
	return true
}

// startFinal readies the FINAL node, which runs when all else is over.
func (e *engine) startFinal() {
	e.finalStarted = true
	f := e.dag.Final
	if e.nodes[f.index].status != StatusNotReady {
		return
	}
	e.out.logf("Running the FINAL node %s (DAG status %d)", f.Name, e.dagStatus())
	e.makeReady(f.index)
}

// dagStatus is $DAG_STATUS so far.
func (e *engine) dagStatus() DAGStatus {
	switch {
	case e.aborting:
		return DAGStatusAbort
	case e.failed > 0:
		return DAGStatusNodeFailed
	}
	return DAGStatusOK
}

// end settles the DAG: removes SERVICE jobs, writes the rescue DAG if
// work is left, and the last outputs.
func (e *engine) end(ctx context.Context) (Result, error) {
	e.removeServices(ctx)
	res := e.tally()
	status := e.dagStatus()
	if f := e.dag.Final; f != nil && e.nodes[f.index].status == StatusDone && status != DAGStatusAbort {
		// A FINAL node that succeeds makes the DAG succeed, as in
		// HTCondor.
		status = DAGStatusOK
	} else if f != nil && e.nodes[f.index].status == StatusError {
		status = DAGStatusNodeFailed
	}
	res.Status = status
	switch status {
	case DAGStatusOK:
		res.ExitCode = 0
	case DAGStatusAbort:
		res.ExitCode = e.abortReturn
	default:
		res.ExitCode = 1
	}
	if res.Done < e.countWork() {
		path, err := writeRescue(e)
		if err != nil {
			return res, err
		}
		res.Rescue = path
		e.out.logf("Writing Rescue DAG file %s", path)
	}
	e.dirty = true
	if err := e.writeOutputs(true); err != nil {
		return res, err
	}
	if status == DAGStatusOK {
		e.out.logf("All jobs Completed!")
	}
	e.summary()
	e.out.logf("**** condor_dagman (Harrier) pid %d EXITING WITH STATUS %d", os.Getpid(), res.ExitCode)
	return res, nil
}

// countWork is how many nodes must be done for the DAG to be complete: all
// but SERVICE nodes.
func (e *engine) countWork() int {
	n := 0
	for _, node := range e.dag.Nodes {
		if node.Kind != ServiceNode {
			n++
		}
	}
	return n
}

func (e *engine) tally() Result {
	r := Result{Recovered: e.recovered}
	for i, n := range e.dag.Nodes {
		if n.Kind == ServiceNode {
			continue
		}
		switch e.nodes[i].status {
		case StatusDone:
			r.Done++
		case StatusError:
			r.Failed++
		case StatusFutile:
			r.Futile++
		}
	}
	return r
}

func (e *engine) removeServices(ctx context.Context) {
	for cluster, i := range e.byCluster {
		if e.dag.Nodes[i].Kind == ServiceNode && cluster >= 0 {
			if err := e.sub.Remove(ctx, cluster); err != nil {
				e.out.logf("ERROR: removing SERVICE node %s: %v", e.dag.Nodes[i].Name, err)
			}
		}
	}
}

// cancelled ends a run whose context was cancelled: a removal removes the
// jobs and writes a rescue DAG; anything else stops as a crash would.
func (e *engine) cancelled(ctx context.Context) (Result, error) {
	if !errors.Is(context.Cause(ctx), ErrRemoved) {
		e.out.logf("Stopped; the next run recovers from the nodes log")
		e.out.flush()
		return Result{Status: DAGStatusHalted, Stopped: true}, nil
	}
	e.out.logf("Removed: removing the node jobs")
	ctx = context.WithoutCancel(ctx)
	// Jobs that ended before the removal count as done in the rescue DAG.
	if err := e.readLog(ctx); err != nil {
		return Result{}, err
	}
	e.removeAll(ctx)
	res := e.tally()
	res.Status, res.ExitCode = DAGStatusRemoved, 2
	path, err := writeRescue(e)
	if err != nil {
		return res, err
	}
	res.Rescue = path
	e.out.logf("Writing Rescue DAG file %s", path)
	e.dirty = true
	if err := e.writeOutputs(true); err != nil {
		return res, err
	}
	e.summary()
	e.out.logf("**** condor_dagman (Harrier) pid %d EXITING WITH STATUS %d", os.Getpid(), res.ExitCode)
	return res, nil
}

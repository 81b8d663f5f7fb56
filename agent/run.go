package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

// stopAction says why the agent stopped a running job.
type stopAction int

const (
	actionNone stopAction = iota
	actionRemove
	actionHold
	actionShutdown
)

// run is one job between its match and the end of its shadow.
type run struct {
	id         jobqueue.JobID
	claimID    string
	slot       string
	startdAddr string
	// platform is the machine's CheckpointPlatform: a checkpoint taken
	// there is restored only on a machine of the same (see
	// checkpoint.Platform).
	platform string
	// machine is the claimed slot's ad, for the job's MachineAttr
	// attributes (see machineattrs.go).
	machine *classad.ClassAd

	mu       sync.Mutex
	action   stopAction
	reason   string
	commands chan shadow.Command // to the shadow, once it runs
	executed bool                // the job's process started
	vacated  bool                // a checkpoint came with the job's vacate
	// policyVacate is set once the job's periodic_vacate asked for this
	// run's vacate, which is asked once.
	policyVacate bool

	// shells are the processes started in the job for its owner.
	shells runShells
}

func (r *run) stopAction() (stopAction, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.action, r.reason
}

// markStopped records why r's job is stopped, unless a reason was given
// already; a removal overrides a hold, so that a job removed while its
// hold is being completed still leaves the queue.
func (r *run) markStopped(action stopAction, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.action == actionNone || (action == actionRemove && r.action == actionHold) {
		r.action, r.reason = action, reason
	}
}

// stopRun asks a job's run, if there is one, to stop the job: with its
// kill signal and grace time, or at once if fast. It reports whether the
// job had a run.
func (a *Agent) stopRun(id jobqueue.JobID, action stopAction, reason string, fast bool) bool {
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	if r == nil {
		return false
	}
	r.markStopped(action, reason)
	select {
	case r.commands <- shadow.Command{Kill: true, Reason: reason, Fast: fast}:
	default:
	}
	return true
}

// askCheckpoint asks a running job's shadow for a checkpoint (and, with
// vacate, to stop the job after it). It reports whether the job runs.
func (a *Agent) askCheckpoint(id jobqueue.JobID, vacate bool) bool {
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	// A suspended job is on its machine too: the starter lets it go for
	// the dump and stops it again after a checkpoint that leaves it.
	if r == nil || !a.jobs.status(id).runs() {
		return false
	}
	select {
	case r.commands <- shadow.Command{Checkpoint: true, Vacate: vacate}:
	default:
	}
	return true
}

// askPolicyVacate asks, once a run, for the vacate of a running job whose
// periodic_vacate became true.
func (a *Agent) askPolicyVacate(id jobqueue.JobID) {
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	asked := r.policyVacate
	r.policyVacate = true
	r.mu.Unlock()
	if !asked {
		a.askCheckpoint(id, true)
	}
}

// askSuspend has a running job's processes stopped where they are for
// its owner (harrier suspend), or with resume a job so suspended let run
// on (harrier continue). The execute machine's owner policy suspends and
// resumes apart from this: a job it holds suspended stays so.
func (a *Agent) askSuspend(ctx context.Context, id jobqueue.JobID, resume bool) error {
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	switch st := a.jobs.status(id); {
	case r == nil || (!resume && st != Running):
		return fmt.Errorf("job %s is not running", id)
	case resume && st != Suspended:
		return fmt.Errorf("job %s is not suspended", id)
	}
	// Not dropped as a second checkpoint request may be: a continue
	// right after a suspend must arrive.
	t := time.NewTimer(wire.CallTimeout)
	defer t.Stop()
	select {
	case r.commands <- shadow.Command{Suspend: true, Resume: resume}:
		return nil
	case <-t.C:
		return fmt.Errorf("job %s: its shadow is busy; try again", id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopRuns stops every job this agent runs and waits, for up to
// StopGrace, for their runs to record how the jobs stopped; then it
// abandons the runs and waits for them to return. No run starts after it
// is called.
func (a *Agent) stopRuns() {
	a.mu.Lock()
	a.stopping = true
	ids := make([]jobqueue.JobID, 0, len(a.runs))
	for id := range a.runs {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.stopRun(id, actionShutdown, "agent shutting down", false)
	}
	done := make(chan struct{})
	go func() {
		a.work.Wait()
		close(done)
	}()
	grace := time.NewTimer(a.cfg.StopGrace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-grace.C:
	}
	a.log.Warn("runs still going after the stop grace are abandoned; their jobs are requeued on restart", "grace", a.cfg.StopGrace)
	a.endRuns()
	<-done
}

// claim is a slot this agent holds.
type claim struct {
	id         string
	slot       string
	startdAddr string
	machine    *classad.ClassAd
	since      time.Time
	// owner is the Owner of the job the claim was made for: the user the
	// matchmaker charges for the slot, whose jobs alone may reuse it.
	owner string
	// group is that job's AccountingGroup, if any: the matchmaker charges
	// the slot to it, so only jobs charged alike may reuse it.
	group string
	// limits are the concurrency limits of that job (ConcurrencyLimits):
	// the matchmaker counted them for the slot, so only jobs that use the
	// same may reuse it.
	limits string
	// gang, for a job matched as a gang, holds its other machines with
	// this one (see gang.go); nil for an ordinary match.
	gang *gangClaims
}

// startRun claims the matched slot and runs the job's shadow. It returns at
// once; the claim's work goes on in the background.
func (a *Agent) startRun(id jobqueue.JobID, req *wire.MatchedRequest) error {
	machine, err := classad.Parse(req.MachineAd)
	if err != nil {
		return fmt.Errorf("match for job %s: bad machine ad: %w", id, err)
	}
	c := &claim{id: req.ClaimId, slot: req.Slot, startdAddr: req.StartdAddr, machine: machine}
	if len(req.Gang) > 0 {
		if c.gang, err = newGangClaims(c, req); err != nil {
			return fmt.Errorf("match for job %s: %w", id, err)
		}
	}
	r, err := a.newRun(id, c)
	if err != nil {
		return err
	}
	// The claim's work outlives the negotiator's request: the agent owns
	// it, under runCtx.
	if !a.goTracked(func() { a.useClaim(a.runCtx, c, r) }) {
		a.endRun(r)
		return errStopping
	}
	return nil
}

// errStopping refuses work to a stopping agent.
var errStopping = errors.New("agent is stopping")

// newRun registers a run of job id under claim c, unless the job already
// has one.
func (a *Agent) newRun(id jobqueue.JobID, c *claim) (*run, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return nil, errStopping
	}
	if _, busy := a.runs[id]; busy {
		return nil, fmt.Errorf("job %s is already being run", id)
	}
	platform, _ := c.machine.EvalString(checkpoint.AttrPlatform)
	r := &run{id: id, claimID: c.id, slot: c.slot, startdAddr: c.startdAddr, platform: platform, machine: c.machine,
		commands: make(chan shadow.Command, 1)}
	a.runs[id] = r
	return r, nil
}

func (a *Agent) endRun(r *run) {
	a.mu.Lock()
	delete(a.runs, r.id)
	a.mu.Unlock()
	a.kick()
}

// useClaim claims the slot, runs r's job under it, and then, for as long as
// the claim's work life lasts, the next idle job that matches the same
// machine, without asking the matchmaker again (HTCondor's claim reuse).
// The claim is kept alive while it is held and released at the end.
func (a *Agent) useClaim(ctx context.Context, c *claim, r *run) {
	ad, ok := a.queue.Get(r.id)
	if !ok || a.jobs.status(r.id) != Idle {
		if ok {
			a.completeStop(ctx, r)
		}
		a.endRun(r)
		return
	}
	var machineAd string
	if c.gang != nil {
		machineAd, ok = a.claimGang(ctx, c, r, ad)
	} else {
		machineAd, ok = a.requestClaim(ctx, c, r, ad)
	}
	if !ok {
		a.endRun(r)
		return
	}
	if c.gang != nil {
		defer a.holdGang(ctx, c)()
	}
	if m, err := classad.Parse(machineAd); err == nil && machineAd != "" {
		c.machine = m
		// A match with a partitionable slot is claimed as the dynamic
		// slot the startd carved for it: that is where the jobs run
		// (RemoteHost). Nothing else reads the names yet.
		if name, ok := m.EvalString("Name"); ok && name != "" && c.gang == nil {
			c.slot, r.slot = name, name
		}
	}
	c.since = time.Now()
	c.owner, _ = ad.EvalString(AttrOwner)
	c.group, _ = ad.EvalString(AttrAccountingGroup)
	c.limits, _ = ad.EvalString(matchmaker.AttrConcurrencyLimits)
	stop := a.keepAlive(ctx, c)
	defer func() {
		stop()
		a.client.releaseClaim(ctx, c.startdAddr, c.id)
	}()
	// One shadow, running as the claim's owner, serves the claim's jobs in
	// turn; one that broke is replaced.
	var sp *shadowProc
	defer func() {
		if sp != nil {
			sp.close()
		}
	}()
	for {
		if sp != nil && sp.broken {
			sp.close()
			sp = nil
		}
		var (
			ev  shadow.Event
			err error
		)
		// Removed or held while the slot was being claimed: the job is
		// not started only to be stopped.
		if a.completeStop(ctx, r) {
			a.endRun(r)
			return
		}
		if sp == nil {
			sp, err = a.startShadow(c.owner)
		}
		if err == nil {
			job := ad
			if c.gang != nil {
				job = c.gang.jobAd(ad)
			}
			var hold string
			switch job, hold, err = a.expandForRun(ctx, r, job, c.machine); {
			case hold != "":
				ev = shadow.Event{Type: shadow.EventHold, Reason: hold}
			case err == nil:
				ev, err = a.serveOnShadow(ctx, sp, c, r, job)
			}
		}
		if err != nil {
			a.log.Error("shadow", "job", r.id, "err", err)
			ev = shadow.Event{Type: shadow.EventFailed, Reason: err.Error()}
		}
		a.finished(ctx, r, ev)
		a.endRun(r)
		action, _ := r.stopAction()
		if action != actionNone || ev.Type == shadow.EventFailed || ev.Type == shadow.EventEvicted {
			return // the claim may be gone or unwanted
		}
		if c.gang != nil {
			return // its machines and licenses were the job's, not its owner's
		}
		if time.Since(c.since) >= a.cfg.ClaimWorkLife {
			return
		}
		if r, ad = a.nextJobFor(c, r.id); r == nil {
			return
		}
	}
}

// completeStop completes a removal or hold asked for while r's job had
// no shadow to complete it (see stopRun), and reports whether there was
// one.
func (a *Agent) completeStop(ctx context.Context, r *run) bool {
	action, reason := r.stopAction()
	if action != actionRemove && action != actionHold {
		return false
	}
	a.finished(ctx, r, shadow.Event{Type: shadow.EventFailed, Reason: reason})
	return true
}

// nextJobFor picks the next idle job of the claim's owner that matches the
// claimed machine and registers a run for it. Only the owner's jobs reuse
// a claim, as in HTCondor: the slot is charged to the owner (or the
// owner's accounting group, which the job must share), and a claim won by
// the owner's priority must not serve another user; and only jobs
// that use the same concurrency limits, which the matchmaker counted for
// the claim. It looks first
// at the jobs that follow the one just finished in its cluster, which
// usually match too, so that a large queue is not scanned for every job;
// jobs of the cluster that have left the queue already leave gaps it steps
// over.
func (a *Agent) nextJobFor(c *claim, after jobqueue.JobID) (*run, *classad.ClassAd) {
	// The match, the dearest test, comes last: a queue holds many jobs
	// of other owners, or not idle.
	try := func(id jobqueue.JobID, ad *classad.ClassAd) *run {
		if st := statusOf(ad); st != Idle || !isJob(id) {
			return nil
		}
		if owner, _ := ad.EvalString(AttrOwner); owner != c.owner {
			return nil
		}
		if group, _ := ad.EvalString(AttrAccountingGroup); group != c.group {
			return nil
		}
		if limits, _ := ad.EvalString(matchmaker.AttrConcurrencyLimits); !strings.EqualFold(limits, c.limits) {
			return nil
		}
		if !classad.Match(ad, c.machine) {
			return nil
		}
		r, err := a.newRun(id, c)
		if err != nil {
			return nil // running already
		}
		return r
	}
	for p := after.Proc + 1; p <= after.Proc+nextJobLookahead; p++ {
		id := jobqueue.JobID{Cluster: after.Cluster, Proc: p}
		ad, ok := a.queue.Get(id)
		if !ok {
			continue
		}
		if r := try(id, ad); r != nil {
			return r, ad
		}
	}
	// Then the first jobs of the clusters after it: a DAG's nodes are a
	// cluster each, submitted together.
	for c := after.Cluster + 1; c <= after.Cluster+nextJobLookahead; c++ {
		id := jobqueue.JobID{Cluster: c, Proc: 0}
		ad, ok := a.queue.Get(id)
		if !ok {
			continue
		}
		if r := try(id, ad); r != nil {
			return r, ad
		}
	}
	var (
		r    *run
		pick *classad.ClassAd
	)
	a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if r = try(id, ad); r != nil {
			pick = ad.Copy()
			return false
		}
		return true
	})
	return r, pick
}

// nextJobLookahead is how many following jobs of the same cluster, and
// then first jobs of the following clusters, a reused claim tries before
// it searches the whole queue.
const nextJobLookahead = 64

// keepAlive renews the claim's lease until the returned function is
// called; that function returns once renewals have stopped.
func (a *Agent) keepAlive(ctx context.Context, c *claim) func() {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		// The first renewal comes at once, to learn the startd's lease;
		// then three renewals fit in each lease, at most KeepAliveInterval
		// apart, so that a lease shorter than the interval still holds.
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				next := a.cfg.KeepAliveInterval
				lease, err := a.client.keepAlive(ctx, c.startdAddr, c.id)
				if err != nil {
					a.log.Warn("claim keepalive", "slot", c.slot, "err", err)
				} else if lease > 0 {
					next = min(next, lease/3)
				}
				t.Reset(max(next, 100*time.Millisecond))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// shadowProc is a shadow process serving the jobs of one claim, all of one
// owner, in turn.
type shadowProc struct {
	shadows prometheus.Gauge // the agent's count of running shadows
	owner   string
	cmd     *exec.Cmd
	// ckptDir is the owner's image store as the shadow names it, or "".
	ckptDir string
	stdin   io.Closer
	// send and events are the shadow's command and event streams.
	send   *childproc.Sender[shadow.Command]
	events *childproc.Receiver[shadow.Event]
	// broken is set once the process is of no further use: it exited, or
	// talking to it failed.
	broken bool
}

// startShadow starts a shadow process running as owner.
func (a *Agent) startShadow(owner string) (*shadowProc, error) {
	cmd := exec.Command(a.cfg.ShadowCommand[0], a.cfg.ShadowCommand[1:]...)
	// A submit machine runs a shadow for every running job; as HTCondor's,
	// each works on one processor. A job's remote reads through it ran as
	// fast with one as with two (docs/sandbox-bench.md).
	cmd.Env = childproc.Env(1)
	cmd.Stderr = os.Stderr
	if cred, err := credentialFor(owner); err != nil {
		return nil, err
	} else if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	// The shadow reaches its owner's image store through a descriptor: the
	// spool above it is the agent's alone, and the owner gets no way into
	// it beyond that one directory.
	var ckptDir string
	if dir, err := a.checkpointStore(owner); err != nil {
		return nil, err
	} else if dir != "" {
		f, err := os.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("image store of %s: %w", owner, err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
		ckptDir = fmt.Sprintf("/proc/self/fd/%d", 3+len(cmd.ExtraFiles)-1)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start shadow: %w", err)
	}
	a.metrics.shadows.Inc()
	return &shadowProc{shadows: a.metrics.shadows, owner: owner, cmd: cmd, ckptDir: ckptDir, stdin: stdin, send: childproc.NewSender[shadow.Command](stdin),
		events: childproc.NewReceiver[shadow.Event](stdout)}, nil
}

// close tells the shadow that its agent is done with it (a job it still
// serves is stopped) and waits for it to exit.
func (p *shadowProc) close() {
	p.stdin.Close()
	_ = p.cmd.Wait()
	p.shadows.Dec()
}

// serveOnShadow has the claim's shadow p serve r's job under claim c, relays
// commands to it, and returns the job's final event. Once the shadow is
// ready for the job's starter the agent activates the claim itself: the
// shadow holds no credential that could.
func (a *Agent) serveOnShadow(ctx context.Context, p *shadowProc, c *claim, r *run, ad *classad.ClassAd) (shadow.Event, error) {
	host, _, err := net.SplitHostPort(a.cfg.AdvertiseAddr)
	if err != nil {
		return shadow.Event{}, fmt.Errorf("agent address %q: %w", a.cfg.AdvertiseAddr, err)
	}
	secret, err := newSecret()
	if err != nil {
		return shadow.Event{}, err
	}
	spec := &shadow.Spec{JobAd: ad.String(), Secret: secret, ListenHost: host, CAPEM: a.cfg.CAPEM,
		CheckpointDir: p.ckptDir, CheckpointKey: r.id.String()}
	if err := p.send.Send(shadow.Command{Job: spec}); err != nil {
		p.broken = true
		return shadow.Event{}, fmt.Errorf("send job to shadow: %w", err)
	}
	// A kill asked for before the shadow had the job must still reach it.
	if action, reason := r.stopAction(); action != actionNone {
		_ = p.send.Send(shadow.Command{Kill: true, Reason: reason})
	}
	r.shells.attach(p.send)
	// The shadow ends the job's processes before its final event; this
	// ends them here too when it fails.
	defer r.shells.detach("lost the job's shadow")
	// The relay ends before the next job is sent, so that a command for
	// this job never reaches the next.
	done := make(chan struct{})
	relayed := make(chan struct{})
	defer func() {
		close(done)
		<-relayed
	}()
	go func() {
		defer close(relayed)
		for {
			select {
			case c := <-r.commands:
				_ = p.send.Send(c)
			case <-done:
				return
			}
		}
	}()

	// An abandoned run closes the shadow's input: the shadow stops the job
	// and exits, which ends the wait for its events.
	defer context.AfterFunc(ctx, func() { p.stdin.Close() })()
	var activateErr error
	for {
		ev, err := p.events.Receive()
		if err != nil {
			p.broken = true
			if errors.Is(err, io.EOF) {
				return shadow.Event{Type: shadow.EventFailed, Reason: "shadow exited without a result"}, nil
			}
			return shadow.Event{}, fmt.Errorf("read shadow events: %w", err)
		}
		if ev.Type == shadow.EventReady {
			req := &wire.ActivateClaimRequest{ClaimId: c.id, JobAd: spec.JobAd, ShadowAddr: ev.Addr,
				Secret: secret, ShadowFingerprint: ev.Fingerprint}
			if activateErr = a.activate(ctx, c, req); activateErr != nil {
				// The shadow gives up on the job and reports its end;
				// the relay, alive until this function returns, writes it.
				r.commands <- shadow.Command{Kill: true, Reason: activateErr.Error()}
			}
			continue
		}
		if ev.Type == shadow.EventShell {
			r.shells.deliver(ev.Shell)
			continue
		}
		if a.progress(ctx, r, ev) {
			continue
		}
		r.shells.detach(shadow.ShellEndReason(ev))
		if activateErr != nil && ev.Type == shadow.EventFailed {
			ev.Reason = activateErr.Error()
		}
		return ev, nil
	}
}

// progress applies an event of r's shadow that tells of the job's
// progress, and reports whether ev was one: the others end the run, and
// finished applies them.
func (a *Agent) progress(ctx context.Context, r *run, ev shadow.Event) bool {
	switch ev.Type {
	case shadow.EventExecuting:
		a.executing(ctx, r, ev)
	case shadow.EventSuspended, shadow.EventResumed:
		a.suspended(ctx, r, ev.Type == shadow.EventSuspended, ev.Reason)
	case shadow.EventUsage:
		a.usage(ctx, r, ev)
	case shadow.EventCheckpointed:
		a.checkpointed(ctx, r, ev)
		r.vacated = r.vacated || ev.Vacate
	case shadow.EventCheckpointFailed:
		a.checkpointFailed(ctx, r, ev)
	case shadow.EventSelfCheckpointed:
		a.selfCheckpointed(ctx, r, ev)
	case shadow.EventTransfer:
		a.transferred(ctx, r, ev)
	case shadow.EventDisconnected, shadow.EventReconnected, shadow.EventReconnectFailed:
		a.reconnection(ctx, r, ev)
	default:
		return false
	}
	return true
}

// activate has the claim's startd start the job's starter. On a reused
// claim the startd may not yet have seen the previous job's starter exit:
// the slot is still busy for a moment, and activation is tried again.
func (a *Agent) activate(ctx context.Context, c *claim, req *wire.ActivateClaimRequest) error {
	ctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	var err error
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err = a.client.activateClaim(ctx, c.startdAddr, req)
		if status.Code(err) != codes.FailedPrecondition {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
			continue
		}
		break
	}
	if err != nil {
		return fmt.Errorf("activate claim at %s: %w", c.startdAddr, err)
	}
	return nil
}

// newSecret returns a fresh job secret: 256 random bits in hex.
func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make job secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// credentialFor returns the credential a shadow for owner runs with: the
// owner's own, when the agent runs as root and the owner is someone else.
func credentialFor(owner string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 || owner == "" || owner == "root" {
		return nil, nil
	}
	u, err := user.Lookup(owner)
	if err != nil {
		return nil, fmt.Errorf("look up job owner %s: %w", owner, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

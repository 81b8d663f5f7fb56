package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"syscall"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
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

	mu       sync.Mutex
	action   stopAction
	reason   string
	commands chan shadow.Command // to the shadow, once it runs
	executed bool                // the job's process started
}

func (r *run) stopAction() (stopAction, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.action, r.reason
}

// stopRun asks a job's run, if there is one, to stop the job. It reports
// whether the job had a run.
func (a *Agent) stopRun(id jobqueue.JobID, action stopAction, reason string) bool {
	a.mu.Lock()
	r := a.runs[id]
	a.mu.Unlock()
	if r == nil {
		return false
	}
	r.mu.Lock()
	if r.action == actionNone {
		r.action, r.reason = action, reason
	}
	r.mu.Unlock()
	select {
	case r.commands <- shadow.Command{Kill: true, Reason: reason}:
	default:
	}
	return true
}

// stopRuns stops every job this agent runs (shutdown).
func (a *Agent) stopRuns() {
	a.mu.Lock()
	ids := make([]jobqueue.JobID, 0, len(a.runs))
	for id := range a.runs {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.stopRun(id, actionShutdown, "agent shutting down")
	}
}

// startRun claims the matched slot and runs the job's shadow. It returns at
// once; the run goes on in the background.
func (a *Agent) startRun(ctx context.Context, id jobqueue.JobID, req *wire.MatchedRequest) error {
	a.mu.Lock()
	if _, busy := a.runs[id]; busy {
		a.mu.Unlock()
		return fmt.Errorf("job %s is already being run", id)
	}
	r := &run{id: id, claimID: req.ClaimId, slot: req.Slot, startdAddr: req.StartdAddr, commands: make(chan shadow.Command, 1)}
	a.runs[id] = r
	a.mu.Unlock()
	go func() {
		defer func() {
			a.mu.Lock()
			delete(a.runs, id)
			a.mu.Unlock()
			a.kick()
		}()
		a.runJob(context.WithoutCancel(ctx), r)
	}()
	return nil
}

func (a *Agent) runJob(ctx context.Context, r *run) {
	ad, ok := a.queue.Get(r.id)
	if !ok || a.jobs.status(r.id) != Idle {
		return
	}
	accepted, reason, err := a.client.requestClaim(ctx, r.startdAddr, &wire.RequestClaimRequest{
		Slot: r.slot, ClaimId: r.claimID, JobAd: ad.String(), Agent: a.cfg.Name})
	if err != nil || !accepted {
		a.log.Info("claim refused", "job", r.id, "slot", r.slot, "reason", reason, "err", err)
		return
	}
	defer a.client.releaseClaim(ctx, r.startdAddr, r.claimID)

	ev, err := a.runShadow(ctx, r, ad)
	if err != nil {
		a.log.Error("shadow", "job", r.id, "err", err)
		ev = shadow.Event{Type: shadow.EventFailed, Reason: err.Error()}
	}
	a.finished(ctx, r, ev)
}

// runShadow starts the job's shadow process, relays commands to it, and
// returns its final event.
func (a *Agent) runShadow(ctx context.Context, r *run, ad *classad.ClassAd) (shadow.Event, error) {
	host, _, err := net.SplitHostPort(a.cfg.AdvertiseAddr)
	if err != nil {
		return shadow.Event{}, fmt.Errorf("agent address %q: %w", a.cfg.AdvertiseAddr, err)
	}
	cmd := exec.Command(a.cfg.ShadowCommand[0], a.cfg.ShadowCommand[1:]...)
	cmd.Stderr = os.Stderr
	owner, _ := ad.EvalString("Owner")
	if cred, err := credentialFor(owner); err != nil {
		return shadow.Event{}, err
	} else if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return shadow.Event{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return shadow.Event{}, err
	}
	if err := cmd.Start(); err != nil {
		return shadow.Event{}, fmt.Errorf("start shadow: %w", err)
	}
	defer cmd.Wait()
	spec := &shadow.Spec{JobAd: ad.String(), ClaimID: r.claimID, StartdAddr: r.startdAddr, ListenHost: host,
		CertPEM: a.cfg.CertPEM, KeyPEM: a.cfg.KeyPEM, CAPEM: a.cfg.CAPEM}
	if err := shadow.Write(stdin, spec); err != nil {
		return shadow.Event{}, fmt.Errorf("send spec to shadow: %w", err)
	}
	// A kill asked for before the shadow started must still reach it.
	if action, reason := r.stopAction(); action != actionNone {
		_ = shadow.Write(stdin, shadow.Command{Kill: true, Reason: reason})
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case c := <-r.commands:
				_ = shadow.Write(stdin, c)
			case <-done:
				stdin.Close()
				return
			}
		}
	}()

	dec := json.NewDecoder(stdout)
	for {
		var ev shadow.Event
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return shadow.Event{Type: shadow.EventFailed, Reason: "shadow exited without a result"}, nil
			}
			return shadow.Event{}, fmt.Errorf("read shadow events: %w", err)
		}
		switch ev.Type {
		case shadow.EventExecuting:
			a.executing(ctx, r, ev.Host)
		case shadow.EventSuspended, shadow.EventResumed:
			a.suspended(ctx, r, ev.Type == shadow.EventSuspended, ev.Reason)
		case shadow.EventUsage:
			a.usage(ctx, r, ev)
		default:
			return ev, nil
		}
	}
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

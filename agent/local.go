package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/jobargs"
	"harrier.dev/harrier/shadow"
)

// Scheduler and local universe jobs run on the agent's own machine, as
// their owners, started and watched by the agent itself with no match,
// shadow or starter, as HTCondor's schedd runs them (condor_dagman is a
// scheduler universe job). Harrier runs both the same way.
const (
	universeScheduler = 7
	universeLocal     = 12
)

// Attributes of a local job's process, so that an agent that restarts can
// end a process its predecessor left behind (see recover).
const (
	AttrLocalPid       = "LocalJobPid"
	AttrLocalStartTick = "LocalJobStartTick"
)

// localKillGrace is how long a local job has between its kill signal and
// SIGKILL, unless it asks for another time (job_max_vacate_time):
// condor_dagman needs time to remove its node jobs and write its rescue DAG.
const localKillGrace = time.Minute

// holdStartFailed is HTCondor's hold code for a job whose process could not
// be made (FailedToCreateProcess).
const holdStartFailed = 6

// isLocal reports whether the job runs on the agent's machine.
func isLocal(ad *classad.ClassAd) bool {
	u, _ := ad.EvalInt(AttrJobUniverse)
	return u == universeScheduler || u == universeLocal
}

// startLocal registers a run of the local job id and starts it in the
// background, unless the job runs already or the agent is stopping.
func (a *Agent) startLocal(id jobqueue.JobID) {
	r, err := a.newRun(id, &claim{slot: a.cfg.Name, startdAddr: a.cfg.AdvertiseAddr})
	if err != nil {
		return
	}
	if !a.goTracked(func() { a.runLocal(a.runCtx, r) }) {
		a.endRun(r)
	}
}

// runLocal runs r's job as a process of its owner and records its end, as
// a shadow's run records a remote job's. Its stop commands send the job
// its remove_kill_sig, hold_kill_sig or kill_sig, and SIGKILL after its
// grace time; an agent that shuts down stops it with kill_sig and requeues
// it, to be started again when the agent is back. An abandoned run (ctx)
// kills the process.
func (a *Agent) runLocal(ctx context.Context, r *run) {
	defer a.endRun(r)
	ad, ok := a.queue.Get(r.id)
	if !ok || a.jobs.status(r.id) != Idle {
		if ok {
			a.completeStop(ctx, r)
		}
		return
	}
	if a.completeStop(ctx, r) {
		return
	}
	cmd, err := a.localCommand(ad)
	if err == nil {
		err = cmd.Start()
		closeFiles(cmd)
	}
	if err != nil {
		a.finished(ctx, r, shadow.Event{Type: shadow.EventHold, Code: holdStartFailed,
			Reason: "Error from " + a.cfg.Name + ": failed to start the job: " + err.Error()})
		return
	}
	pid := cmd.Process.Pid
	if u, _ := ad.EvalInt(AttrJobUniverse); u == universeScheduler {
		a.schedulerProcs.add(int32(pid))
		defer a.schedulerProcs.remove(int32(pid))
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	a.executing(ctx, r, shadow.Event{Type: shadow.EventExecuting})
	if _, err := a.jobs.apply(ctx, r.id, func(*classad.ClassAd) (step, error) {
		return step{set: change{AttrLocalPid: classad.Int(int64(pid)), AttrLocalStartTick: classad.Int(startTick(pid))}}, nil
	}); err != nil {
		a.log.Warn("record local job's process", "job", r.id, "err", err)
	}
	a.log.Info("local job started", "job", r.id, "pid", pid)

	var kill <-chan time.Time
	for done := false; !done; {
		select {
		case c := <-r.commands:
			if !c.Kill {
				continue // checkpoints and vacates mean nothing here
			}
			action, _ := r.stopAction()
			sig, grace := stopSignal(ad, action)
			if c.Fast {
				sig, grace = unix.SIGKILL, 0
			}
			_ = unix.Kill(-pid, sig)
			if kill == nil {
				kill = time.After(grace)
			}
		case <-kill:
			_ = unix.Kill(-pid, unix.SIGKILL)
		case <-ctx.Done():
			_ = unix.Kill(-pid, unix.SIGKILL)
			<-exited
			return
		case <-exited:
			done = true
		}
	}
	// What is left of the job's process group goes with it.
	_ = unix.Kill(-pid, unix.SIGKILL)
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	ev := shadow.Event{Type: shadow.EventExited, ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		ev.BySignal, ev.Signal, ev.ExitCode = true, int(ws.Signal()), 0
	}
	if action, _ := r.stopAction(); action == actionShutdown {
		ev = shadow.Event{Type: shadow.EventEvicted, Reason: "the agent shut down; the job will run again"}
	}
	a.log.Info("local job ended", "job", r.id, "pid", pid, "code", ev.ExitCode, "signal", ev.Signal)
	a.finished(ctx, r, ev)
}

// localCommand makes the process of a local job: its executable and
// arguments, in its Iwd, with its environment and its CONDOR_ID, its
// standard files opened as its owner, running as its owner in a process
// group of its own.
func (a *Agent) localCommand(ad *classad.ClassAd) (*exec.Cmd, error) {
	owner, _ := ad.EvalString(AttrOwner)
	iwd, _ := ad.EvalString(AttrIwd)
	exe, _ := ad.EvalString(AttrCmd)
	if exe == "" {
		return nil, errors.New("no executable")
	}
	if !filepath.IsAbs(exe) {
		exe = filepath.Join(iwd, exe)
	}
	argText, _ := ad.EvalString(AttrArguments)
	args, err := jobargs.Split(argText)
	if err != nil {
		return nil, fmt.Errorf("bad Arguments: %w", err)
	}
	envText, _ := ad.EvalString(AttrEnvironment)
	env, err := jobargs.SplitEnv(envText)
	if err != nil {
		return nil, fmt.Errorf("bad Environment: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = iwd
	// HTCondor tells a scheduler universe job its id this way; condor_dagman
	// marks its node jobs with it.
	cmd.Env = append(env, "CONDOR_ID="+jobID(ad).String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cred, err := credentialFor(owner); err != nil {
		return nil, err
	} else if cred != nil {
		cmd.SysProcAttr.Credential = cred
	}
	cred, err := asuser.Lookup(owner)
	if err != nil {
		return nil, err
	}
	open := func(attr string, flag int) (*os.File, error) {
		path, _ := ad.EvalString(attr)
		if path == "" {
			path = os.DevNull
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(iwd, path)
		}
		f, err := asuser.OpenFile(cred, path, flag, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", attr, err)
		}
		return f, nil
	}
	files := []*os.File{}
	for _, s := range []struct {
		attr string
		flag int
	}{{AttrIn, os.O_RDONLY}, {AttrOut, os.O_WRONLY | os.O_CREATE | os.O_APPEND}, {AttrErr, os.O_WRONLY | os.O_CREATE | os.O_APPEND}} {
		f, err := open(s.attr, s.flag)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		files = append(files, f)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[1], files[2]
	return cmd, nil
}

// closeFiles closes the agent's copies of a started process's standard
// files.
func closeFiles(cmd *exec.Cmd) {
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := f.(*os.File); ok {
			f.Close()
		}
	}
}

// stopSignal is the signal that stops a local job for action, and how long
// it has before SIGKILL.
func stopSignal(ad *classad.ClassAd, action stopAction) (unix.Signal, time.Duration) {
	name, _ := ad.EvalString(AttrKillSig)
	var specific string
	switch action {
	case actionRemove:
		specific, _ = ad.EvalString(AttrRemoveKillSig)
	case actionHold:
		specific, _ = ad.EvalString(AttrHoldKillSig)
	}
	if specific != "" {
		name = specific
	}
	grace := localKillGrace
	if secs, ok := ad.EvalReal(AttrJobMaxVacateTime); ok && secs >= 0 {
		grace = time.Duration(secs * float64(time.Second))
	}
	return signalNumber(name), grace
}

// signalNumber reads HTCondor's spelling of a signal ("SIGTERM", "TERM",
// "15"); anything unknown means SIGTERM.
func signalNumber(name string) unix.Signal {
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return unix.Signal(n)
	}
	name = strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return unix.SIGTERM
}

// startTick is when process pid started, in clock ticks since boot (field
// 22 of /proc/PID/stat), or 0 if it is not known: with the pid it names
// the process whatever pids are reused.
func startTick(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, from field 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n
}

// endLeftover kills the process group of a local job that an agent that
// stopped without stopping it left behind, if that process still runs.
func (a *Agent) endLeftover(id jobqueue.JobID, ad *classad.ClassAd) {
	pid, _ := ad.EvalInt(AttrLocalPid)
	tick, _ := ad.EvalInt(AttrLocalStartTick)
	if pid <= 0 || tick == 0 || startTick(int(pid)) != tick {
		return
	}
	a.log.Info("ending the process of a local job left by the agent's last run", "job", id, "pid", pid)
	_ = unix.Kill(-int(pid), unix.SIGKILL)
}

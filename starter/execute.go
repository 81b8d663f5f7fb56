package starter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// How long a job has between its soft kill signal and SIGKILL, unless it
// asks for another time (job_max_vacate_time).
const killGrace = 5 * time.Second

// stopping is how a job is stopped: its kill signal (kill_sig), then
// SIGKILL after its grace time.
type stopping struct {
	sig   unix.Signal
	grace time.Duration
}

// stoppingFor reads a job's kill_sig and job_max_vacate_time.
func stoppingFor(job *classad.ClassAd) stopping {
	st := stopping{sig: signalNumber(stringAttr(job, "KillSig")), grace: killGrace}
	if secs, ok := job.EvalReal("JobMaxVacateTime"); ok && secs >= 0 {
		st.grace = time.Duration(secs * float64(time.Second))
	}
	return st
}

// stopRequest asks for the job to stop, saying why; fast stops it at
// once (SIGKILL), as a removal the job did not want graceful.
type stopRequest struct {
	reason string
	fast   bool
}

// How often a running job's usage goes to the shadow.
const usageInterval = 10 * time.Second

// control is a request from the execute machine (its startd) about the job.
type control int

const (
	controlSuspend control = iota + 1
	controlContinue
	controlVacate
	controlCheckpoint // a checkpoint, the job running on
	// The job's owner's suspend and continue (harrier suspend), through
	// the shadow: apart from the owner policy's, so that neither lets
	// the job run while the other holds it.
	controlOwnerSuspend
	controlOwnerContinue
)

// suspenders are who hold a job suspended.
type suspenders uint8

const (
	byPolicy suspenders = 1 << iota // the execute machine's owner policy
	byOwner                         // the job's owner
)

// reason says why a job so suspended is, as its events tell.
func (s suspenders) reason() string {
	if s&byPolicy != 0 {
		return "the machine's owner policy"
	}
	return "its owner (harrier suspend)"
}

// checkpointing is how a job is checkpointed: take, if not nil, sends a
// checkpoint home; a vacate takes one when want is set, and interval (if
// positive) asks for periodic ones.
type checkpointing struct {
	take     func(ctx context.Context, job Job, vacate bool) error
	want     bool
	interval time.Duration
}

// selfCheckpointing is how a job that checkpoints itself is handled
// (checkpoint_exit_code, SuccessCheckpointExitCode): when it exits with
// code of its own accord, save (if not nil) keeps its checkpoint files,
// and the job starts again at once, here.
type selfCheckpointing struct {
	on   bool
	code int64
	save func(context.Context) error
}

func selfCheckpointingFor(job *classad.ClassAd) selfCheckpointing {
	code, ok := job.EvalInt("SuccessCheckpointExitCode")
	return selfCheckpointing{on: ok, code: code}
}

// execution is one job from its start to its end: how it starts, what
// reaches it (the shadow's kills, the startd's controls, checkpoint
// times), and what it has been through. run takes it through its phases:
// start (with the starter's own output pipes), report, then supervise until
// the job's first process exits; a job that exits to checkpoint itself
// goes through them again, started with restart.
type execution struct {
	start    func(context.Context, *Task) (Job, error)
	restart  func(context.Context, *Task) (Job, error)
	task     *Task
	stopping stopping
	send     *sender
	spool    *outputSpool // nil: the job's output is streamed
	out      *outputCount // what of it the job has written, streamed
	kills    <-chan stopRequest
	controls <-chan control
	ck       checkpointing
	self     selfCheckpointing
	// shellOpens are processes its owner asks for in the job, shells
	// those started.
	shellOpens <-chan *wire.ShellOpen
	shells     *shells
	logger     *slog.Logger

	job        Job
	hardKill   <-chan time.Time // set once the job was told to stop
	stopReason string           // why
	evict      string           // why the execute machine took the job back
	// suspended: the job's processes are stopped, for suspendedBy.
	suspended   bool
	suspendedBy suspenders
}

// waited is how the job's Wait returned.
type waited struct {
	exit Exit
	err  error
}

// run starts the job and sees it to its end, streaming its output
// through send. A request on kills stops it (the kill signal first,
// SIGKILL after the grace time, or SIGKILL at once if fast); controls
// suspend, continue, vacate or checkpoint it. A job that exits with its
// checkpoint code has its files saved and runs again. It returns an error
// only when the job could not start.
func (e *execution) run(ctx context.Context) (*wire.Exited, error) {
	for first := true; ; first = false {
		w, err := e.runOnce(ctx, first)
		if err != nil {
			return nil, err
		}
		if !e.checkpointExit(w) {
			return e.exited(w)
		}
		e.saveCheckpoint(ctx)
		e.start = e.restart
		if e.task.Stdin != nil {
			// The job reads its input again from the start, as it did.
			if _, err := e.task.Stdin.Seek(0, io.SeekStart); err != nil {
				e.logger.Warn("rewind the job's input", "err", err)
			}
		}
	}
}

// runOnce starts the job (the first time, reporting its start) and
// supervises it until its first process exits.
func (e *execution) runOnce(ctx context.Context, first bool) (waited, error) {
	stdoutR, stderrR, err := e.startJob(ctx)
	if err != nil {
		return waited{}, err
	}
	defer stdoutR.Close()
	defer stderrR.Close()
	if first {
		e.reportStarted()
	} else {
		e.logger.Info("job started again after its checkpoint")
	}
	copied := make(chan struct{}, 2)
	_, restored := e.job.(Restored)
	for fd, r := range map[int32]*os.File{1: stdoutR, 2: stderrR} {
		// A job that starts from its beginning writes its output anew.
		spool, err := e.spool.open(int(fd), first && !restored)
		if err != nil {
			e.logger.Warn("keep the job's output in its scratch directory; streaming it instead", "err", err)
		}
		var from io.Reader = r
		if spool == nil && e.out != nil {
			from = e.out.reader(int(fd), r)
		}
		go pump(from, fd, e.send, spool, copied)
	}
	done := make(chan waited, 1)
	go func() {
		x, err := e.job.Wait()
		done <- waited{x, err}
	}()
	w := e.supervise(ctx, done)
	if e.checkpointExit(w) {
		// The job starts again: processes started in this run end with
		// it, and new ones may come.
		e.shells.stop("the job exited to checkpoint itself and starts again")
	} else {
		e.shells.end(e.shellEndReason(w))
	}
	<-copied
	<-copied
	return w, nil
}

// checkpointExit reports whether the job exited with its checkpoint code
// of its own accord: not stopped, vacated or over a limit.
func (e *execution) checkpointExit(w waited) bool {
	return e.self.on && w.err == nil && w.exit.Signal == 0 && w.exit.HoldReason == "" &&
		int64(w.exit.Code) == e.self.code && e.hardKill == nil && e.evict == ""
}

// saveCheckpoint keeps the checkpoint files of a job that exited to
// checkpoint itself. A job whose files cannot be saved runs on from them
// all the same; its record says why its checkpoint failed.
func (e *execution) saveCheckpoint(ctx context.Context) {
	if e.self.save == nil {
		e.logger.Info("job exited to checkpoint; it works in its scratch directory, whose files stay here")
		return
	}
	if err := e.self.save(ctx); err != nil {
		e.checkpointFailed("save checkpoint files", err, false)
	}
}

// shellEndReason tells the processes started in the job why it ended.
func (e *execution) shellEndReason(w waited) string {
	switch {
	case e.evict != "":
		return "the job was evicted: " + e.evict
	case e.stopReason != "":
		return "the job was stopped: " + e.stopReason
	case w.exit.HoldReason != "":
		return "the job was held: " + w.exit.HoldReason
	default:
		return "the job exited"
	}
}

// openShell starts the process o asks for in the job, or refuses it.
func (e *execution) openShell(ctx context.Context, o *wire.ShellOpen) {
	x, ok := e.job.(Execer)
	refused := ""
	switch {
	case !ok:
		refused = errNoExec.Error()
	case e.hardKill != nil:
		refused = "the job is being stopped"
	case e.suspended:
		// As HTCondor says: better refused with a reason than let in
		// and frozen at once without one.
		refused = "the job is suspended (" + e.suspendedBy.reason() + "); try again when it runs"
	}
	e.shells.start(ctx, o, x, refused)
}

// startJob starts the job with output pipes of the starter's own: the
// job's exit, not the pipes closing, ends the run, so a leftover
// background process holding them cannot keep it alive. It returns the
// read ends.
func (e *execution) startJob(ctx context.Context) (stdout, stderr *os.File, err error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, nil, err
	}
	e.task.Stdout, e.task.Stderr = stdoutW, stderrW
	job, err := e.start(ctx, e.task)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		return nil, nil, err
	}
	e.job = job
	return stdoutR, stderrR, nil
}

// reportStarted tells the shadow the job started, and whether it was
// restored from its checkpoint or, failing that, started afresh.
func (e *execution) reportStarted() {
	started := &wire.Started{Pid: int32(e.job.Pid()), RestoreFailure: e.task.RestoreFailure}
	if r, ok := e.job.(Restored); ok {
		started.Restored = true
		started.RestoreSeconds = r.RestoreTime().Seconds()
	}
	if err := e.send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Started{Started: started}}); err != nil {
		e.logger.Warn("report start", "err", err)
	}
}

// supervise answers what reaches the running job until its first process
// exits, and returns how.
func (e *execution) supervise(ctx context.Context, done <-chan waited) waited {
	usage := time.NewTicker(usageInterval)
	defer usage.Stop()
	var periodic <-chan time.Time
	if e.ck.take != nil && e.ck.interval > 0 {
		t := time.NewTicker(e.ck.interval)
		defer t.Stop()
		periodic = t.C
	}
	kills := e.kills
	for {
		select {
		case r := <-kills:
			if r.fast {
				e.logger.Info("killing job", "reason", r.reason)
				_ = e.job.Signal(unix.SIGKILL)
			} else {
				e.stop(r.reason)
			}
			kills = nil
		case c := <-e.controls:
			e.control(ctx, c)
		case o := <-e.shellOpens:
			e.openShell(ctx, o)
		case <-periodic:
			if !e.suspended && e.hardKill == nil {
				e.checkpoint(ctx, "periodic checkpoint")
			}
		case <-ctx.Done():
			_ = e.job.Signal(unix.SIGKILL)
			ctx = context.Background()
		case <-e.hardKill:
			_ = e.job.Signal(unix.SIGKILL)
		case <-usage.C:
			if u, err := e.job.Usage(); err == nil && u != (Usage{}) {
				e.send.note(&wire.StarterMessage{Body: &wire.StarterMessage_Usage{Usage: wireUsage(u)}})
			}
		case w := <-done:
			return w
		}
	}
}

// stop sends the job its kill signal, and SIGKILL after the grace time.
func (e *execution) stop(reason string) {
	if e.hardKill != nil {
		return
	}
	e.logger.Info("stopping job", "reason", reason, "grace", e.stopping.grace)
	e.stopReason = reason
	if e.suspended {
		_ = e.job.Continue() // a stopped job cannot handle its kill signal
	}
	_ = e.job.Signal(e.stopping.sig)
	e.hardKill = time.After(e.stopping.grace)
}

// control carries out what the execute machine asks.
func (e *execution) control(ctx context.Context, c control) {
	switch c {
	case controlSuspend:
		e.suspend(byPolicy)
	case controlOwnerSuspend:
		e.suspend(byOwner)
	case controlContinue:
		e.resume(byPolicy)
	case controlOwnerContinue:
		e.resume(byOwner)
	case controlVacate:
		e.vacate(ctx)
	case controlCheckpoint:
		if e.ck.take != nil {
			e.checkpoint(ctx, "checkpoint")
		}
	}
}

// suspend stops the job's processes for by, unless they are already.
func (e *execution) suspend(by suspenders) {
	if e.suspendedBy&by != 0 || e.hardKill != nil {
		return
	}
	if !e.suspended {
		if err := e.job.Suspend(); err != nil {
			e.logger.Warn("suspend job", "err", err)
			return
		}
		e.suspended = true
		e.send.note(&wire.StarterMessage{Body: &wire.StarterMessage_Suspended{Suspended: &wire.Suspended{Reason: by.reason()}}})
	}
	e.suspendedBy |= by
}

// resume lets the job's processes run on once neither its owner policy
// nor its owner holds it suspended.
func (e *execution) resume(by suspenders) {
	if e.suspendedBy&by == 0 {
		return
	}
	e.suspendedBy &^= by
	if e.suspendedBy != 0 || !e.suspended {
		return
	}
	if err := e.job.Continue(); err != nil {
		e.logger.Warn("continue job", "err", err)
		return
	}
	e.suspended = false
	e.send.note(&wire.StarterMessage{Body: &wire.StarterMessage_Resumed{Resumed: &wire.Resumed{}}})
}

// vacate takes the job off the machine: with a checkpoint where it wants
// one (the dump ends the job), else, or if the dump fails, by stopping it.
func (e *execution) vacate(ctx context.Context) {
	e.evict = "the execute machine vacated the job"
	if e.ck.take != nil && e.ck.want && e.hardKill == nil {
		if e.suspended {
			_ = e.job.Continue()
			e.suspended, e.suspendedBy = false, 0
		}
		// CRIU takes the job's own processes, not those of its owner's
		// sessions, which hold terminals and pipes outside the job.
		e.shells.stop("the job is being vacated")
		err := e.ck.take(ctx, e.job, true)
		if err == nil {
			e.evict = "the execute machine vacated the job, which was checkpointed"
			return
		}
		// The job's record and event log say why it will run again from
		// its start (or its last checkpoint).
		e.checkpointFailed("vacate without a checkpoint", err, true)
		e.evict = "the execute machine vacated the job, which could not be checkpointed: " + err.Error()
	}
	e.stop(e.evict)
}

// checkpoint takes a checkpoint, the job running on, or staying
// suspended. The dump freezes the job at a moment when CRIU can seize
// every process, which the suspension's moment may not be (a vfork's
// wait): a suspended job is let go for it and stopped again after.
func (e *execution) checkpoint(ctx context.Context, what string) {
	e.shells.stop("the job is being checkpointed")
	if e.suspended {
		if err := e.job.Continue(); err != nil {
			e.checkpointFailed(what, fmt.Errorf("continue the suspended job for its dump: %w", err), false)
			return
		}
		defer func() {
			if err := e.job.Suspend(); err != nil {
				e.logger.Warn("suspend job again after its checkpoint", "err", err)
			}
		}()
	}
	if err := e.ck.take(ctx, e.job, false); err != nil {
		e.checkpointFailed(what, err, false)
	}
}

// checkpointFailed reports a checkpoint that failed where the user looks,
// not only in this log.
func (e *execution) checkpointFailed(what string, err error, vacate bool) {
	e.logger.Warn(what, "err", err)
	e.send.note(&wire.StarterMessage{Body: &wire.StarterMessage_CheckpointFailed{
		CheckpointFailed: &wire.CheckpointFailed{Reason: err.Error(), Vacate: vacate}}})
}

// exited is the job's end as the shadow hears of it.
func (e *execution) exited(w waited) (*wire.Exited, error) {
	if w.err != nil {
		return nil, fmt.Errorf("wait for job: %w", w.err)
	}
	x := &wire.Exited{ExitCode: int32(w.exit.Code), Usage: wireUsage(w.exit.Usage),
		HoldReason: w.exit.HoldReason, HoldCode: int32(w.exit.HoldCode)}
	if w.exit.Signal != 0 {
		x.BySignal, x.Signal = true, int32(w.exit.Signal)
	}
	if e.evict != "" && x.HoldReason == "" {
		x.Evicted, x.EvictReason = true, e.evict
	}
	return x, nil
}

func wireUsage(u Usage) *wire.Usage {
	return &wire.Usage{UserCpuSeconds: u.UserCPU, SysCpuSeconds: u.SysCPU, MaxRssBytes: u.MaxRSSBytes, MemoryBytes: u.MemoryBytes}
}

// pump streams one of the job's output pipes to the shadow, or, if spool
// is set, appends it there (and closes spool at the end).
func pump(r io.Reader, fd int32, send *sender, spool *os.File, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	if spool != nil {
		defer spool.Close()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			var werr error
			if spool != nil {
				_, werr = spool.Write(buf[:n])
			} else {
				data := append([]byte(nil), buf[:n]...)
				werr = send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: fd, Data: data}}})
			}
			if werr != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// signalNumber reads HTCondor's kill_sig ("SIGTERM", "TERM", "15");
// anything unknown means SIGTERM.
func signalNumber(name string) unix.Signal {
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return unix.Signal(n)
	}
	name = strings.ToUpper(strings.TrimSpace(name))
	if name == "" {
		return unix.SIGTERM
	}
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return unix.SIGTERM
}

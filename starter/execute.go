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

	"harrier.dev/harrier/wire"
)

// How long a job has between its soft kill signal and SIGKILL.
const killGrace = 5 * time.Second

// How often a running job's usage goes to the shadow.
const usageInterval = 10 * time.Second

// control is a request from the execute machine (its startd) about the job.
type control int

const (
	controlSuspend control = iota + 1
	controlContinue
	controlVacate
	controlCheckpoint // a checkpoint, the job running on
)

// checkpointing is how a job is checkpointed: take, if not nil, sends a
// checkpoint home; a vacate takes one when want is set, and interval (if
// positive) asks for periodic ones.
type checkpointing struct {
	take     func(ctx context.Context, job Job, vacate bool) error
	want     bool
	interval time.Duration
}

// execute starts the task with the runner and sees it to its end,
// streaming output through send. A reason on kills stops it (the kill
// signal first, SIGKILL after the grace time); controls suspend, continue
// or vacate it. It returns an error only when the job could not start.
func execute(ctx context.Context, start func(context.Context, *Task) (Job, error), t *Task, killSig unix.Signal, send *sender,
	kills <-chan string, controls <-chan control, ck checkpointing, logger *slog.Logger) (*wire.Exited, error) {
	// Our own pipes: the job's exit, not the pipes closing, ends the run,
	// so a leftover background process holding them cannot keep it alive.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdoutR.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return nil, err
	}
	defer stderrR.Close()
	t.Stdout, t.Stderr = stdoutW, stderrW
	job, err := start(ctx, t)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return nil, err
	}
	started := &wire.Started{Pid: int32(job.Pid())}
	if r, ok := job.(Restored); ok {
		started.Restored = true
		started.RestoreSeconds = r.RestoreTime().Seconds()
	}
	started.RestoreFailure = t.RestoreFailure
	// A checkpoint that fails is reported where the user looks, not only
	// in this log.
	failed := func(what string, err error, vacate bool) {
		logger.Warn(what, "err", err)
		_ = send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_CheckpointFailed{
			CheckpointFailed: &wire.CheckpointFailed{Reason: err.Error(), Vacate: vacate}}})
	}
	if err := send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Started{Started: started}}); err != nil {
		logger.Warn("report start", "err", err)
	}
	copied := make(chan struct{}, 2)
	go pump(stdoutR, 1, send, copied)
	go pump(stderrR, 2, send, copied)

	type waited struct {
		exit Exit
		err  error
	}
	done := make(chan waited, 1)
	go func() {
		x, err := job.Wait()
		done <- waited{x, err}
	}()

	usage := time.NewTicker(usageInterval)
	defer usage.Stop()
	var periodic <-chan time.Time
	if ck.take != nil && ck.interval > 0 {
		t := time.NewTicker(ck.interval)
		defer t.Stop()
		periodic = t.C
	}
	var (
		hardKill  <-chan time.Time
		evict     string
		suspended bool
	)
	stop := func(reason string) {
		if hardKill != nil {
			return
		}
		logger.Info("stopping job", "reason", reason)
		if suspended {
			_ = job.Continue() // a stopped job cannot handle its kill signal
		}
		_ = job.Signal(killSig)
		hardKill = time.After(killGrace)
	}
	for {
		select {
		case reason := <-kills:
			stop(reason)
			kills = nil
		case c := <-controls:
			switch c {
			case controlSuspend:
				if err := job.Suspend(); err != nil {
					logger.Warn("suspend job", "err", err)
					continue
				}
				suspended = true
				_ = send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Suspended{Suspended: &wire.Suspended{Reason: "the machine's owner policy"}}})
			case controlContinue:
				if err := job.Continue(); err != nil {
					logger.Warn("continue job", "err", err)
					continue
				}
				suspended = false
				_ = send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Resumed{Resumed: &wire.Resumed{}}})
			case controlVacate:
				evict = "the execute machine vacated the job"
				if ck.take != nil && ck.want && hardKill == nil {
					if suspended {
						_ = job.Continue()
						suspended = false
					}
					err := ck.take(ctx, job, true)
					if err == nil {
						evict = "the execute machine vacated the job, which was checkpointed"
						continue // the dump ended the job
					}
					// The job's record and event log say why it will run
					// again from its start (or its last checkpoint).
					failed("vacate without a checkpoint", err, true)
					evict = "the execute machine vacated the job, which could not be checkpointed: " + err.Error()
				}
				stop(evict)
			case controlCheckpoint:
				if ck.take == nil {
					continue
				}
				if err := ck.take(ctx, job, false); err != nil {
					failed("checkpoint", err, false)
				}
			}
		case <-periodic:
			if !suspended && hardKill == nil {
				if err := ck.take(ctx, job, false); err != nil {
					failed("periodic checkpoint", err, false)
				}
			}
		case <-ctx.Done():
			_ = job.Signal(unix.SIGKILL)
			ctx = context.Background()
		case <-hardKill:
			_ = job.Signal(unix.SIGKILL)
		case <-usage.C:
			if u, err := job.Usage(); err == nil && u != (Usage{}) {
				_ = send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Usage{Usage: wireUsage(u)}})
			}
		case w := <-done:
			<-copied
			<-copied
			if w.err != nil {
				return nil, fmt.Errorf("wait for job: %w", w.err)
			}
			x := &wire.Exited{ExitCode: int32(w.exit.Code), Usage: wireUsage(w.exit.Usage),
				HoldReason: w.exit.HoldReason, HoldCode: int32(w.exit.HoldCode)}
			if w.exit.Signal != 0 {
				x.BySignal, x.Signal = true, int32(w.exit.Signal)
			}
			if evict != "" && x.HoldReason == "" {
				x.Evicted, x.EvictReason = true, evict
			}
			return x, nil
		}
	}
}

func wireUsage(u Usage) *wire.Usage {
	return &wire.Usage{UserCpuSeconds: u.UserCPU, SysCpuSeconds: u.SysCPU, MaxRssBytes: u.MaxRSSBytes, MemoryBytes: u.MemoryBytes}
}

// pump streams one of the job's output pipes to the shadow.
func pump(r io.Reader, fd int32, send *sender, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: fd, Data: data}}}) != nil {
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

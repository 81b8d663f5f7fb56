// Package starter is the execute-side process that runs one job.
//
// A startd launches a starter for a job with a Spec, and may give it the
// claim's further jobs in turn (Spec.Reusable). The starter connects to
// the job's shadow on the submit machine, asks it for everything the job
// needs (its description, executable and input), runs the job, streams its
// output back as it is produced, and reports how it ended and what it used.
// If the shadow asks, or the session with the shadow is lost, the starter
// stops the job: a job never runs without someone on the submit side
// representing its owner.
package starter

import (
	"context"

	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/iofs"
	"harrier.dev/harrier/jobargs"
	"harrier.dev/harrier/wire"
)

// Hold codes, as HTCondor numbers them.
const (
	holdCodeExec  = 6  // the executable could not be started
	holdCodeInput = 13 // the job's input could not be fetched
)

// How long the starter waits for the shadow to end the session after the
// job's exit has been reported.
const sessionEndTimeout = 30 * time.Second

// Starter runs one job for its shadow.
type Starter struct {
	spec     *Spec
	conn     *grpc.ClientConn
	runner   Runner
	logger   *slog.Logger
	controls chan control
	// images are the container images the claim keeps (nil: none).
	images *claimImages
}

// New returns a starter for spec that reaches the job's shadow over conn
// and runs the job with runner. A starter kept for a claim's jobs uses one
// connection for all, since they have the same shadow.
func New(spec *Spec, conn *grpc.ClientConn, runner Runner, logger *slog.Logger) *Starter {
	return &Starter{spec: spec, conn: conn, runner: runner, logger: logger, controls: make(chan control, 4)}
}

// Suspend, Continue and Vacate pass the execute machine's owner policy on
// to the running job. Vacate stops the job (its kill signal, then SIGKILL)
// and reports it evicted, so that it runs again elsewhere.
func (s *Starter) Suspend()  { s.control(controlSuspend) }
func (s *Starter) Continue() { s.control(controlContinue) }
func (s *Starter) Vacate()   { s.control(controlVacate) }

func (s *Starter) control(c control) {
	select {
	case s.controls <- c:
	default:
	}
}

// Run carries the job from start to finish: attach to the shadow, which
// sends the job; prepare it; run it while listening to the shadow; report
// its end. It returns when the job has ended and the shadow has been told,
// or when the session is lost (the job is then killed).
func (s *Starter) Run(ctx context.Context) error {
	job, err := classad.Parse(s.spec.JobAd)
	if err != nil {
		return fmt.Errorf("starter: parse job ad: %w", err)
	}
	cluster, _ := job.EvalInt("ClusterId")
	proc, _ := job.EvalInt("ProcId")
	jobID := fmt.Sprintf("%d.%d", cluster, proc)
	logger := s.logger.With("job", jobID)

	client := wire.NewShadowClient(s.conn)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, job, owner, err := s.attach(ctx, client, jobID)
	if err != nil {
		return err
	}
	send := newSender(stream, jobLease(job))
	task, stopping, hold := s.prepare(ctx, client, job, jobID)
	var xfer *fileTransfer
	if hold == nil {
		if xfer = transferFor(job, client, s.spec.Secret, s.spec.ScratchDir, task.Path, logger); xfer != nil {
			xfer.plugins = s.spec.TransferPlugins
			if xfer.user, err = s.jobUser(); err != nil {
				hold = &wire.Exited{HoldReason: "Failed to transfer input files: " + err.Error(), HoldCode: holdCodeInput}
			} else {
				hold = xfer.inputs(ctx)
			}
			xfer.sessionUp = send.waitUp
		}
	}
	if hold != nil {
		// Nothing else uses the session yet.
		err := stream.Send(&wire.StarterMessage{Body: &wire.StarterMessage_Exited{Exited: hold}})
		_ = stream.CloseSend()
		_, _ = stream.Recv() // wait for the shadow to end the session
		return err
	}
	if task.Stdin != nil {
		defer task.Stdin.Close()
	}
	kills := make(chan stopRequest, 1)
	ended := make(chan struct{})
	shellOpens := make(chan *wire.ShellOpen, maxShellOpens)
	go s.listen(ctx, client, jobID, stream, send, kills, ended, shellOpens, logger)
	exited, err := s.executeJob(ctx, s.conn, client, job, owner, task, stopping, send, kills, shellOpens, xfer, logger)
	if err != nil {
		exited = &wire.Exited{HoldReason: err.Error(), HoldCode: holdCodeExec}
	}
	if err := send.sendExit(&wire.StarterMessage{Body: &wire.StarterMessage_Exited{Exited: exited}}); err != nil {
		return fmt.Errorf("report exit to shadow: %w", err)
	}
	// The shadow ends the session once it has written everything.
	select {
	case <-ended:
	case <-time.After(sessionEndTimeout):
		logger.Warn("shadow did not end the session")
	}
	return nil
}

// attach opens the session with the job's shadow, proves with the job's
// secret that this starter runs the job, and returns the job's ad as the
// shadow sends it (the shadow's copy is authoritative, being the owner's
// representative) and the owner's ids on the submit side, nil if the
// shadow did not say.
func (s *Starter) attach(ctx context.Context, client wire.ShadowClient, jobID string) (wire.Shadow_AttachClient, *classad.ClassAd, *iofs.IDs, error) {
	stream, err := client.Attach(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("attach to shadow %s: %w", s.spec.ShadowAddr, err)
	}
	if err := stream.Send(&wire.StarterMessage{Body: &wire.StarterMessage_Hello{Hello: &wire.Hello{
		JobId: jobID, Secret: s.spec.Secret, Host: s.spec.Host}}}); err != nil {
		return nil, nil, nil, fmt.Errorf("hello to shadow: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("receive job from shadow: %w", err)
	}
	if first.GetJob() == nil {
		return nil, nil, nil, errors.New("shadow did not send the job first")
	}
	spec := first.GetJob()
	job, err := classad.Parse(spec.JobAd)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("starter: parse job ad from shadow: %w", err)
	}
	var owner *iofs.IDs
	if spec.OwnerUid != nil && spec.OwnerGid != nil {
		owner = &iofs.IDs{UID: spec.GetOwnerUid(), GID: spec.GetOwnerGid()}
	}
	return stream, job, owner, nil
}

// maxShellOpens is how many processes asked for in the job may wait for
// the job to have started; the shadow gives up on any more.
const maxShellOpens = 8

// listen passes the shadow's commands on while the job runs: a kill (or a
// lost session, which kills the job unless it comes back within the job's
// lease) to kills, checkpoints to the job's controls, processes to start
// in the job to shellOpens. It closes ended when the session ends: the
// shadow ends it once it has the job's exit.
func (s *Starter) listen(ctx context.Context, client wire.ShadowClient, jobID string, stream wire.Shadow_AttachClient,
	send *sender, kills chan<- stopRequest, ended chan<- struct{}, shellOpens chan<- *wire.ShellOpen, logger *slog.Logger) {
	defer close(ended)
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) && send.exitSent() {
				return
			}
			if send.lease > 0 && !errors.Is(err, io.EOF) {
				logger.Warn("lost the shadow; attaching again within the job lease", "lease", send.lease, "err", err)
				if stream, err = s.reattach(ctx, client, jobID, send, logger); err == nil {
					logger.Info("attached to the shadow again")
					continue
				}
			}
			err = fmt.Errorf("lost the shadow: %w", err)
			send.fail(err)
			select {
			case kills <- stopRequest{reason: err.Error()}:
			default:
			}
			return
		}
		if k := msg.GetKill(); k != nil {
			select {
			case kills <- stopRequest{reason: k.Reason, fast: k.Fast}:
			default:
			}
		}
		if o := msg.GetShell(); o != nil {
			select {
			case shellOpens <- o:
			default:
				logger.Warn("too many processes asked for in the job at once; dropping one", "session", o.Session)
			}
		}
		if sp := msg.GetSuspend(); sp != nil {
			if sp.Resume {
				s.control(controlOwnerContinue)
			} else {
				s.control(controlOwnerSuspend)
			}
		}
		if c := msg.GetCheckpoint(); c != nil {
			if c.Vacate {
				s.Vacate()
			} else {
				s.control(controlCheckpoint)
			}
		}
	}
}

// prepare fetches the executable and input into the scratch directory and
// builds the task. A job that cannot be prepared gets a hold reason.
func (s *Starter) prepare(ctx context.Context, client wire.ShadowClient, job *classad.ClassAd, jobID string) (*Task, stopping, *wire.Exited) {
	cmd, _ := job.EvalString("Cmd")
	exe := filepath.Join(s.spec.ScratchDir, "condor_exec.exe")
	if cmd != "" {
		exe = filepath.Join(s.spec.ScratchDir, filepath.Base(cmd))
	}
	// transfer_executable = false names a program of this machine.
	if b, ok := job.EvalBool("TransferExecutable"); ok && !b {
		exe = cmd
	} else if err := s.fetch(ctx, client, "executable", exe, true); err != nil {
		return nil, stopping{}, &wire.Exited{HoldReason: fmt.Sprintf("Cannot fetch executable %s: %v", cmd, err), HoldCode: holdCodeExec}
	}
	scratch := s.spec.ScratchDir
	if r, ok := s.runner.(ScratchRelocator); ok {
		scratch = r.JobScratchDir()
	}
	// $$(CondorScratchDir), which the agent leaves, is the scratch
	// directory as the job sees it.
	withScratch := strings.NewReplacer("$$(CondorScratchDir)", scratch)
	args, err := jobargs.Split(withScratch.Replace(stringAttr(job, "Arguments")))
	if err != nil {
		return nil, stopping{}, &wire.Exited{HoldReason: "Bad Arguments: " + err.Error(), HoldCode: holdCodeExec}
	}
	env, err := jobargs.SplitEnv(withScratch.Replace(stringAttr(job, "Environment")))
	if err != nil {
		return nil, stopping{}, &wire.Exited{HoldReason: "Bad Environment: " + err.Error(), HoldCode: holdCodeExec}
	}
	if err := writeAds(s.spec.ScratchDir, job, s.spec.MachineAd); err != nil {
		return nil, stopping{}, &wire.Exited{HoldReason: "Cannot write the job's ads: " + err.Error(), HoldCode: holdCodeExec}
	}
	t := &Task{ID: jobID, Path: exe, Args: args, Dir: s.spec.ScratchDir, ScratchDir: s.spec.ScratchDir}
	t.Cpus, _ = job.EvalInt("RequestCpus")
	// The processors provisioned: the slot's, at least what the job asked.
	t.Env = jobEnv(env, scratch, stringAttr(job, "Iwd"), s.spec.ThreadEnvVars, max(s.spec.Cpus, t.Cpus, 1))
	t.MemoryMB, _ = job.EvalInt("RequestMemory")
	// request_disk is a limit only when the user gave it. Without it the
	// job carries submit's estimate (DiskUsage: its executable and input),
	// which sizes its match but says nothing of what it will write; like
	// HTCondor, Harrier holds no job for outgrowing an estimate.
	if _, estimated := job.Lookup("DiskUsage"); !estimated {
		t.DiskKB, _ = job.EvalInt("RequestDisk")
	}
	// Every job is held to the slot's share, request or not: a job must
	// not fill the execute machine's disk.
	t.ScratchLimitKB = s.spec.ScratchLimitKB
	// A job that asked for no GPU gets none, though its slot has some:
	// it stays checkpointable, and no other job's device is in reach.
	if n, _ := job.EvalInt("RequestGPUs"); n > 0 {
		giveGPUs(t, s.spec.GPUs, s.spec.GPUDevices)
	}
	t.MachineCpus, t.Cpuset = s.spec.MachineCpus, s.spec.Cpuset
	t.Rlimits = jobRlimits(job)
	if in := stringAttr(job, "In"); in != "" && in != os.DevNull {
		path := filepath.Join(s.spec.ScratchDir, ".harrier_stdin")
		if err := s.fetch(ctx, client, "input", path, false); err != nil {
			return nil, stopping{}, &wire.Exited{HoldReason: fmt.Sprintf("Cannot fetch input %s: %v", in, err), HoldCode: holdCodeInput}
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, stopping{}, &wire.Exited{HoldReason: fmt.Sprintf("Cannot open input %s: %v", in, err), HoldCode: holdCodeInput}
		}
		// The job reads its input from the open file; the name can go.
		_ = os.Remove(path)
		t.Stdin = f
	}
	return t, stoppingFor(job), nil
}

// fetch copies one of the job's files from the shadow to path.
func (s *Starter) fetch(ctx context.Context, client wire.ShadowClient, name, path string, executable bool) error {
	stream, err := client.ReadFile(ctx, &wire.ReadFileRequest{Secret: s.spec.Secret, Name: name})
	if err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if executable {
		mode = 0o700
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
		if _, err := f.Write(chunk.Data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func stringAttr(ad *classad.ClassAd, name string) string {
	s, _ := ad.EvalString(name)
	return s
}

// jobEnv is the environment a job sees: what HTCondor sets, then the
// job's own, which wins where both name a variable (a later entry does).
// scratch is the scratch directory as the job sees it, iwd the job's
// initial directory on the submit side; each of threads is set to cpus,
// the processors provisioned to the job, which libraries such as OpenMP
// read for how many threads to run.
func jobEnv(env []string, scratch, iwd string, threads []string, cpus int64) []string {
	base := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + scratch,
		"TMPDIR=" + scratch,
		"_CONDOR_SCRATCH_DIR=" + scratch,
		"_CONDOR_JOB_AD=" + filepath.Join(scratch, JobAdFile),
		"_CONDOR_MACHINE_AD=" + filepath.Join(scratch, MachineAdFile),
	}
	if iwd != "" {
		base = append(base, "_CONDOR_JOB_IWD="+iwd)
	}
	n := strconv.FormatInt(cpus, 10)
	for _, name := range threads {
		base = append(base, name+"="+n)
	}
	return append(base, env...)
}

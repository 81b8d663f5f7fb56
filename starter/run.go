package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/iofs"
	"harrier.dev/harrier/wire"
)

// executeJob sets up where the job works, starts or restores it, and sees it to
// its end.
func (s *Starter) executeJob(ctx context.Context, conn grpc.ClientConnInterface, client wire.ShadowClient, job *classad.ClassAd,
	owner *iofs.IDs, task *Task, stop stopping, send *sender, kills <-chan stopRequest, shellOpens <-chan *wire.ShellOpen, xfer *fileTransfer,
	logger *slog.Logger) (*wire.Exited, error) {
	ck := &checkpoints{client: client, secret: s.spec.Secret, scratch: s.spec.ScratchDir, logger: logger}
	if k, ok := s.runner.(ScratchKeeper); ok {
		ck.keptByRunner = k.KeptInScratch()
	}
	var (
		files *checkpointFiles
		dir   *jobDir
	)
	// In a container the job works in its submit-side directory itself,
	// through iofs; without one, or with its files transferred, it works
	// in its scratch directory, and with want_submit_dir it sees its
	// submit-side directory there all the same, as submitDirName.
	if iwd := stringAttr(job, "Iwd"); s.spec.Sandbox == "container" && filepath.IsAbs(iwd) && (xfer == nil || xfer.submitDir()) {
		var err error
		dir, err = mountJobDir(ctx, conn, s.spec.Secret, s.spec.ScratchDir, s.jobIDs(), owner, logger)
		if err != nil {
			return &wire.Exited{HoldReason: fmt.Sprintf("Cannot reach the job's directory %s: %v", iwd, err), HoldCode: holdCodeInput}, nil
		}
		defer dir.unmount(context.WithoutCancel(ctx), logger)
		task.Dir, task.DirSource = iwd, dir.mountpoint
		if xfer != nil {
			// Within the scratch directory, which the job's user owns: an
			// Iwd at its own path may lie below directories closed to it.
			scratch := s.spec.ScratchDir
			if r, ok := s.runner.(ScratchRelocator); ok {
				scratch = r.JobScratchDir()
			}
			task.Dir, task.InScratch = path.Join(scratch, submitDirName), true
		}
		ck.syncFiles = dir.sync
		if xfer == nil {
			files = &checkpointFiles{client: client, secret: s.spec.Secret, logger: logger, sync: dir.sync}
		}
	}
	img, hold := s.jobImage(ctx, client, job, task, dir, logger)
	if hold != nil {
		return hold, nil
	}
	defer func() { ck.image.release() }()
	ck.image = img
	ck.lastImage, _ = job.EvalInt("LastCkptImageSize")
	ck.seal, ck.noSeal = sealFor(s.spec)
	policy := checkpointing{take: ck.take, want: wantCheckpoint(job)}
	if secs, ok := job.EvalInt("CheckpointInterval"); ok && secs > 0 {
		policy.interval = time.Duration(secs) * time.Second
	}
	self := selfCheckpointingFor(job)
	// A job that checkpointed itself starts from its last checkpoint
	// files, unless a newer CRIU image restores it.
	fresh := s.runner.Start
	hasFiles := false
	if n, _ := job.EvalInt("NumSelfCheckpoints"); n > 0 && files != nil {
		fresh, hasFiles = files.restoreThen(s.runner.Start), true
	}
	if files != nil {
		self.save = files.save
	}
	start := fresh
	if n, _ := job.EvalInt("NumCkpts"); n > 0 {
		start = s.restoreOrStart(ck, job, fresh, hasFiles, xfer, logger)
	}
	ck.output = &outputCount{}
	e := &execution{start: start, restart: s.runner.Start, task: task, stopping: stop, send: send,
		spool: spoolFor(job, xfer, s.spec.ScratchDir), out: ck.output, kills: kills,
		controls: s.controls, ck: policy, self: self, shellOpens: shellOpens, shells: newShells(client, s.spec.Secret, logger),
		logger: logger}
	x, err := e.run(ctx)
	if err == nil && xfer != nil {
		// A job stopped for its removal or hold sends nothing home; an
		// evicted one keeps its output with it, to go on.
		killed := e.stopReason != "" && e.evict == ""
		switch {
		case killed || x.Evicted:
		case xfer.destination() != "":
			// The output goes with the other outputs.
			xfer.stdio = e.spool.stdioItems(job)
		default:
			if err := e.spool.sendHome(send); err != nil {
				logger.Warn("send the job's output home", "err", err)
			}
		}
		x = xfer.outputs(ctx, x, killed)
	}
	return x, err
}

// startOver gives a job that starts afresh after a failed restore the
// scratch directory a first start finds, where the restore had put back
// the one archived in its image: its inputs, if it has its files
// transferred, and the executable prepare fetched.
func (s *Starter) startOver(ctx context.Context, client wire.ShadowClient, xfer *fileTransfer, t *Task) error {
	if xfer != nil {
		if err := xfer.again(ctx); err != nil {
			return err
		}
	} else if err := emptyDir(s.spec.ScratchDir); err != nil {
		return err
	}
	if filepath.Dir(t.Path) != s.spec.ScratchDir {
		return nil // transfer_executable = false: a program of this machine
	}
	if _, err := os.Lstat(t.Path); err == nil {
		return nil // among the inputs
	}
	if err := s.fetch(ctx, client, "executable", t.Path, true); err != nil {
		return fmt.Errorf("fetch the executable again: %w", err)
	}
	return nil
}

// wantCheckpoint reads the job's want_checkpoint: jobs that run where they
// can be checkpointed are, unless they say no.
func wantCheckpoint(job *classad.ClassAd) bool {
	if b, ok := job.EvalBool("WantCheckpoint"); ok {
		return b
	}
	return true
}

// restoreOrStart returns how to start a job that has a checkpoint: restore
// it, and if that fails, start it with fresh (afresh, or from its
// checkpoint files) or (OnRestoreFailure = "hold") put it on hold, as its
// submit file says; a job with transferred files then gets its inputs
// anew. A job with checkpoint files whose image is gone had
// it dropped when they were saved: they are newer, and its start from
// them is no failure.
func (s *Starter) restoreOrStart(ck *checkpoints, job *classad.ClassAd, fresh func(context.Context, *Task) (Job, error),
	hasFiles bool, xfer *fileTransfer, logger *slog.Logger) func(context.Context, *Task) (Job, error) {
	return func(ctx context.Context, t *Task) (Job, error) {
		rst, ok := s.runner.(Restorer)
		var err error
		scratchReplaced := false
		if !ok {
			err = errNoCheckpoint
		} else {
			var area *imageArea
			if area, err = ck.fetch(ctx); err == nil {
				defer area.remove(logger)
				if ck.image != nil {
					err = ck.image.pin(ctx, area.image(), t)
				}
				if err == nil {
					scratchReplaced, err = ck.restoreScratch(ctx, area.image())
				}
				if err == nil {
					var j Job
					if j, err = rst.Restore(ctx, t, area.image()); err == nil {
						logger.Info("job restored from its checkpoint")
						return j, nil
					}
				}
			}
		}
		if hasFiles && status.Code(err) == codes.NotFound {
			logger.Info("the job's checkpoint files are newer than any image; starting it from them")
			return fresh(ctx, t)
		}
		if errors.Is(err, checkpoint.ErrForged) || errors.Is(err, checkpoint.ErrPrivilege) {
			// Not made by this pool's starters for this job, or made to
			// ask for more than the job has: someone changed it.
			logger.Error("refusing the job's checkpoint image", "err", err)
		}
		if policy, _ := job.EvalString("OnRestoreFailure"); policy == "hold" {
			//lint:ignore ST1005 a hold reason, written as HTCondor writes it
			return nil, fmt.Errorf("Cannot restore the job from its checkpoint: %v", err)
		}
		logger.Warn("cannot restore the job from its checkpoint; starting it afresh", "err", err)
		if t.Stdin != nil {
			// CRIU may have placed it where the dumped job was.
			if _, err := t.Stdin.Seek(0, io.SeekStart); err != nil {
				return nil, fmt.Errorf("rewind the job's input: %w", err)
			}
		}
		if scratchReplaced {
			if rerr := s.startOver(ctx, ck.client, xfer, t); rerr != nil {
				return nil, rerr
			}
		}
		j, serr := fresh(ctx, t)
		if serr != nil {
			return nil, serr
		}
		// The shadow and the job's record say why it starts over.
		t.RestoreFailure = err.Error()
		return j, nil
	}
}

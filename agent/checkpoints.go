package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// Checkpoint images live in the agent's spool, one owner-only store per
// job owner, so that a shadow running as the owner can write its jobs'
// images and nobody else can read them.

// checkpointStore returns the image store directory of a job's owner,
// making it if need be, or "" if the agent keeps no images.
func (a *Agent) checkpointStore(owner string) (string, error) {
	if a.cfg.CheckpointDir == "" || owner == "" {
		return "", nil
	}
	// Owners' shadows get their own store as a descriptor (startShadow):
	// nobody but the agent passes through the stores' directory.
	if err := os.MkdirAll(a.cfg.CheckpointDir, 0o700); err != nil {
		return "", fmt.Errorf("image stores: %w", err)
	}
	if err := os.Chmod(a.cfg.CheckpointDir, 0o700); err != nil {
		return "", fmt.Errorf("image stores: %w", err)
	}
	dir := filepath.Join(a.cfg.CheckpointDir, owner)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("image store of %s: %w", owner, err)
	}
	if cred, err := credentialFor(owner); err != nil {
		return "", err
	} else if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("image store of %s: %w", owner, err)
		}
	}
	return dir, nil
}

// checkpointed records a checkpoint the job's shadow stored.
func (a *Agent) checkpointed(ctx context.Context, r *run, ev shadow.Event) {
	a.metrics.checkpointed(ev)
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		n, _ := ad.EvalInt(AttrNumCkpts)
		c := change{
			AttrNumCkpts:           classad.Int(n + 1),
			AttrLastCkptTime:       classad.Int(time.Now().Unix()),
			AttrLastCkptSize:       classad.Int(ev.StoredBytes),
			AttrLastCkptImageSize:  classad.Int(ev.ImageBytes),
			AttrLastCkptFrozenTime: seconds(ev.FrozenSeconds),
			AttrLastCkptDumpTime:   seconds(ev.DumpSeconds),
		}
		// The job's Requirements ask it of the machine that restores the
		// image (submit adds the clause).
		if r.platform != "" {
			c[checkpoint.AttrLastPlatform] = classad.String(r.platform)
		}
		return step{set: c, log: logs(joblog.Event{Type: joblog.Checkpointed})}, nil
	})
	if err != nil {
		a.log.Error("record checkpoint", "job", r.id, "err", err)
	}
}

// selfCheckpointed records that the job exited with its
// checkpoint_exit_code and its shadow saved its checkpoint files; the job
// runs on, started again by its starter. It is not a completion: the
// job's exit policy does not see it.
func (a *Agent) selfCheckpointed(ctx context.Context, r *run, ev shadow.Event) {
	a.metrics.checkpointed(ev)
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		n, _ := ad.EvalInt(AttrNumSelfCheckpoints)
		return step{set: change{
			AttrNumSelfCheckpoints:     classad.Int(n + 1),
			AttrLastSelfCheckpointTime: classad.Int(time.Now().Unix()),
			AttrLastSelfCheckpointSize: classad.Int(ev.StoredBytes),
		}, log: logs(joblog.Event{Type: joblog.Checkpointed})}, nil
	})
	if err != nil {
		a.log.Error("record checkpoint files", "job", r.id, "err", err)
	}
}

// dropCheckpoint removes the image and checkpoint files of a job that
// left the queue.
func (a *Agent) dropCheckpoint(ad *classad.ClassAd) {
	owner, _ := ad.EvalString(AttrOwner)
	if a.cfg.CheckpointDir == "" || owner == "" {
		return
	}
	dir, key := filepath.Join(a.cfg.CheckpointDir, owner), jobID(ad).String()
	if n, _ := ad.EvalInt(AttrNumSelfCheckpoints); n > 0 {
		files := shadow.CheckpointFilesDir(dir, key)
		for _, d := range []string{files, files + ".old"} {
			if err := os.RemoveAll(d); err != nil {
				a.log.Warn("remove checkpoint files", "job", key, "err", err)
			}
		}
	}
	if err := os.RemoveAll(shadow.IntermediateFilesDir(dir, key)); err != nil {
		a.log.Warn("remove intermediate files", "job", key, "err", err)
	}
	if err := os.Remove(shadow.OutputMarkFile(dir, key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.log.Warn("remove output mark", "job", key, "err", err)
	}
	if n, _ := ad.EvalInt(AttrNumCkpts); n == 0 {
		return
	}
	store, err := checkpoint.OpenStore(dir)
	if err == nil {
		err = store.Remove(key)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.log.Warn("remove checkpoint image", "job", key, "err", err)
	}
}

package sandbox

import (
	"context"
	"fmt"
	"os"

	"harrier.dev/harrier/checkpoint"
)

// A checkpointed job's image holds its processes and nothing else that a
// restore trusts: the container it is restored into is made exactly as
// for a fresh start of the job on this machine (Runner.prepare), from
// the task and the machine's policy. It matches the dumped one because
// nothing of the job's view depends on the machine: the host's
// directories at their own places, the scratch directory at
// JobScratchDir, the working directory at the job's own path.

// Checkpoint dumps the running job into opts.ImageDir with CRIU. Unless
// opts.LeaveRunning, the job ends with the dump and Wait returns. Where
// CRIU can track dirty memory (probed once per Runner) the dump is a
// pre-copy one (checkpoint.DumpPreCopy); elsewhere one full dump. The
// job's network namespace holds its loopback alone, so the image leaves
// it out unless the job holds TCP connections (see
// checkpoint.DumpOptions.LoopbackOnly). A job in its own image has its
// root's writes archived with the image (see rootArchive).
func (j *Job) Checkpoint(ctx context.Context, opts checkpoint.DumpOptions) (*checkpoint.Result, error) {
	if len(j.task.Devices) > 0 {
		return nil, ErrGPUCheckpoint
	}
	if opts.Logger == nil {
		opts.Logger = j.r.log
	}
	opts.LoopbackOnly = true
	opts.Input = j.task.Stdin
	// A dump that ends the job has it destroyed, its root's directory
	// closed, while the root's writes are still to be archived: the
	// checkpoint keeps a handle of its own.
	upper, err := j.upperHandle()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if upper != nil {
		defer upper.Close()
	}
	res, err := checkpoint.DumpPreCopy(ctx, j.c, j.r.checkpointFeatures(ctx), opts)
	if err != nil || upper == nil {
		return res, err
	}
	if err := archiveUpper(upper, opts.ImageDir); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return res, nil
}

// Restore brings back the job checkpointed in imageDir, which must have
// been unpacked with its seal checked (checkpoint.Unpack), for task t on
// this machine: in a container made as for a fresh start of t, with
// t's scratch directory and working directory (t.DirSource, an iofs
// mount, when set). An image whose processes would get more privilege
// than that fresh start is refused (checkpoint.ErrPrivilege). A job in
// its own image (t.ImageLayers, the same image it was dumped in) gets its
// root's writes back from the image first.
func (r *Runner) Restore(ctx context.Context, t *Task, imageDir string) (*Job, *checkpoint.RestoreResult, error) {
	if len(t.Devices) > 0 {
		return nil, nil, ErrGPUCheckpoint
	}
	var rootDir *os.File
	if len(t.ImageLayers) > 0 {
		var err error
		if rootDir, err = restoreUpper(t.ScratchDir, imageDir); err != nil {
			return nil, nil, err
		}
	}
	s, cfg, err := r.prepare(ctx, t, rootDir)
	if err != nil {
		return nil, nil, err
	}
	p := r.process(t, s)
	// CRIU restores the job's own descriptors, its input file handed
	// back opened afresh (checkpoint.RestoreOptions.Input).
	p.Stdin = nil
	var fuse []string
	if t.DirSource != "" {
		fuse = []string{t.DirSource}
	}
	c, res, err := checkpoint.Restore(ctx, checkpoint.RestoreOptions{
		Root: containersDir(r.cfg.StateRoot, r.cfg.Slot), ID: s.id, Config: cfg, Process: p,
		ImageDir: imageDir, Input: t.Stdin, FUSE: fuse, Logger: r.log,
	})
	if err != nil {
		s.release()
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	return newJob(r, c, p, t, s.root), res, nil
}

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer/configs"

	"harrier.dev/harrier/checkpoint"
)

// A checkpointed job travels with its container's configuration, so that
// it is restored into a container whose mounts sit at the same places;
// only their sources change on the new machine (CRIU treats the bind
// mounts as external and reopens the job's files by name through them).

// containerName is the file in an image that holds the configuration.
const containerName = "harrier-container.json"

// savedContainer is what a restore needs besides CRIU's image.
type savedContainer struct {
	Config     *configs.Config `json:"config"`
	Dir        string          `json:"dir"`
	ScratchDir string          `json:"scratch_dir"`
}

// Checkpoint dumps the running job into opts.ImageDir with CRIU. Unless
// opts.LeaveRunning, the job ends with the dump and Wait returns. Where
// CRIU can track dirty memory (probed once per Runner) the dump is a
// pre-copy one (checkpoint.DumpPreCopy); elsewhere one full dump.
func (j *Job) Checkpoint(ctx context.Context, opts checkpoint.DumpOptions) (*checkpoint.Result, error) {
	if opts.Logger == nil {
		opts.Logger = j.r.log
	}
	res, err := checkpoint.DumpPreCopy(ctx, j.c, j.r.checkpointFeatures(ctx), opts)
	if err != nil {
		return nil, err
	}
	cfg := j.c.Config()
	saved := savedContainer{Config: &cfg, Dir: filepath.Clean(j.task.Dir), ScratchDir: filepath.Clean(j.task.ScratchDir)}
	b, err := json.Marshal(&saved)
	if err == nil {
		err = os.WriteFile(filepath.Join(opts.ImageDir, containerName), b, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("save container configuration: %w", err)
	}
	return res, nil
}

// Restore brings back the job checkpointed in imageDir, for task t on
// this machine: its scratch directory and working directory (t.DirSource,
// an iofs mount, when set) take the places the dumped job had them.
func (r *Runner) Restore(ctx context.Context, t *Task, imageDir string) (*Job, *checkpoint.RestoreResult, error) {
	b, err := os.ReadFile(filepath.Join(imageDir, containerName))
	if err != nil {
		return nil, nil, fmt.Errorf("restore: the image has no container configuration: %w", err)
	}
	var saved savedContainer
	if err := json.Unmarshal(b, &saved); err != nil || saved.Config == nil {
		return nil, nil, fmt.Errorf("restore: bad container configuration in the image: %v", err)
	}
	s, _, err := r.prepare(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	dirSource := t.Dir
	if t.DirSource != "" {
		dirSource = t.DirSource
	}
	sources := map[string]string{}
	for _, m := range saved.Config.Mounts {
		switch m.Destination {
		case saved.ScratchDir:
			sources[m.Destination] = t.ScratchDir
		case saved.Dir:
			sources[m.Destination] = dirSource
		}
	}
	cfg, err := checkpoint.Rebind(saved.Config, sources)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	cfg.Rootfs = s.rootfs
	cg := *cfg.Cgroups
	cg.Parent, cg.Name = s.cgroupParent, s.id
	// The dump froze the job first, and the saved configuration says so:
	// a new cgroup made frozen would freeze CRIU in it too.
	limits := *cg.Resources
	limits.Freezer = cgroups.Undefined
	cg.Resources = &limits
	cfg.Cgroups = &cg
	p := r.process(t)
	p.Stdin = nil // CRIU restores the job's own descriptors
	var fuse []string
	if t.DirSource != "" {
		fuse = []string{t.DirSource}
	}
	c, res, err := checkpoint.Restore(ctx, checkpoint.RestoreOptions{
		Root: containersDir(r.cfg.StateRoot), ID: s.id, Config: cfg, Process: p,
		ImageDir: imageDir, FUSE: fuse, Logger: r.log,
	})
	if err != nil {
		return nil, nil, err
	}
	return newJob(r, c, p, t), res, nil
}

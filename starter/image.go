package starter

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// jobImage readies the container image a container or docker universe
// job names (ContainerImage, DockerImage) and sets the task to run in
// it. A file on the submit side is read through the job's initial
// directory, served by iofs at dir (nil when the job's files are
// transferred instead). It returns what releases the image after the
// job, or the job's hold.
func (s *Starter) jobImage(ctx context.Context, job *classad.ClassAd, task *Task, dir *jobDir,
	logger *slog.Logger) (func(), *wire.Exited) {
	ref := stringAttr(job, "ContainerImage")
	if ref == "" {
		ref = stringAttr(job, "DockerImage")
	}
	if ref == "" {
		return func() {}, nil
	}
	hold := func(format string, a ...any) (func(), *wire.Exited) {
		return nil, &wire.Exited{HoldReason: fmt.Sprintf(format, a...), HoldCode: holdCodeInput}
	}
	ir, ok := s.runner.(ImageRunner)
	if !ok {
		return hold("Cannot run the job in container image %s: this machine runs no containers", ref)
	}
	src := strings.TrimPrefix(ref, "docker://")
	if filepath.IsAbs(ref) {
		iwd := stringAttr(job, "Iwd")
		rel, err := filepath.Rel(iwd, ref)
		if dir == nil || err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return hold("Cannot read container image %s: it must be in the job's initial directory %s, "+
				"which the starter reads remotely (should_transfer_files = NO or IF_NEEDED)", ref, iwd)
		}
		src = filepath.Join(dir.mountpoint, rel)
	}
	im, err := ir.Image(ctx, src)
	if err != nil {
		return hold("Cannot get container image %s: %v", ref, err)
	}
	logger.Info("container image ready", "image", ref, "id", im.ID, "layers", len(im.Layers),
		"unpacked", im.Unpacked, "cached", len(im.Layers)-im.Unpacked)
	task.ImageLayers = im.Layers
	task.Env = underEnv(im.Env, task.Env)
	return func() {
		if err := im.Release(); err != nil {
			logger.Warn("release container image", "image", ref, "err", err)
		}
	}, nil
}

// underEnv is env with the variables of base that env does not set
// before it.
func underEnv(base, env []string) []string {
	set := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !set[name] {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

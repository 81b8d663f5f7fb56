package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/imagecache"
	"harrier.dev/harrier/wire"
)

// heldImage is the container image a job runs in, held on this machine
// for it.
type heldImage struct {
	ref    string // as the job names it
	src    string // where this machine reads it: ref, or its path through iofs
	runner ImageRunner
	creds  *RegistryCredentials // the submitter's for the image's registry; nil: none
	im     *Image
	logger *slog.Logger
}

// jobImage readies the container image a container or docker universe
// job names (ContainerImage, DockerImage) and sets the task to run in
// it. A file on the submit side is read through the job's initial
// directory, served by iofs at dir (nil when the job's files are
// transferred instead). A registry image is pulled with the owner's
// credentials for its registry, which the shadow gives (see
// registryCredentials). It returns the image, held until its release
// (nil for a job in no image of its own), or the job's hold.
func (s *Starter) jobImage(ctx context.Context, client wire.ShadowClient, job *classad.ClassAd, task *Task, dir *jobDir,
	logger *slog.Logger) (*heldImage, *wire.Exited) {
	ref := stringAttr(job, "ContainerImage")
	if ref == "" {
		ref = stringAttr(job, "DockerImage")
	}
	if ref == "" {
		return nil, nil
	}
	hold := func(format string, a ...any) (*heldImage, *wire.Exited) {
		return nil, &wire.Exited{HoldReason: fmt.Sprintf(format, a...), HoldCode: holdCodeInput}
	}
	ir, ok := s.runner.(ImageRunner)
	if !ok {
		return hold("Cannot run the job in container image %s: this machine runs no containers", ref)
	}
	h := &heldImage{ref: ref, src: strings.TrimPrefix(ref, "docker://"), runner: ir, logger: logger}
	var stamp fileStamp // zero for a registry's image
	images := s.images
	if filepath.IsAbs(ref) {
		iwd := stringAttr(job, "Iwd")
		rel, err := filepath.Rel(iwd, ref)
		if dir == nil || err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return hold("Cannot read container image %s: it must be in the job's initial directory %s, "+
				"which the starter reads remotely (should_transfer_files = NO or IF_NEEDED)", ref, iwd)
		}
		h.src = filepath.Join(dir.mountpoint, rel)
		if stamp, err = stampOf(h.src); err != nil {
			images = nil // read it as it is, and say what is wrong
		}
	}
	if im, ok := images.get(ref, stamp); ok {
		h.use(im, task, true)
		return h, nil
	}
	if !filepath.IsAbs(ref) {
		h.creds = s.registryCredentials(ctx, client, logger)
	}
	im, err := ir.Image(ctx, h.src, h.creds)
	if err != nil && h.creds == nil && errors.Is(err, imagecache.ErrRegistryDenied) {
		return hold("Cannot get container image %s: %v (the job's owner has no credentials for its registry "+
			"in ~/.docker/config.json)", ref, err)
	}
	if err != nil {
		return hold("Cannot get container image %s: %v", ref, err)
	}
	h.use(images.keep(ref, stamp, im), task, false)
	return h, nil
}

// registryCredentials asks the shadow for the owner's credentials for
// the registry of the job's image; nil: none, and the pull is anonymous.
func (s *Starter) registryCredentials(ctx context.Context, client wire.ShadowClient, logger *slog.Logger) *RegistryCredentials {
	r, err := client.RegistryCredentials(ctx, &wire.RegistryCredentialsRequest{Secret: s.spec.Secret})
	if err != nil {
		logger.Warn("no registry credentials from the shadow; pulling anonymously", "err", err)
		return nil
	}
	if !r.Found {
		return nil
	}
	return &RegistryCredentials{Username: r.Username, Password: r.Password, Auth: r.Auth,
		IdentityToken: r.IdentityToken, RegistryToken: r.RegistryToken}
}

// use makes im the job's image; kept says the claim kept it from a job
// before.
func (h *heldImage) use(im *Image, task *Task, kept bool) {
	h.logger.Info("container image ready", "image", h.ref, "id", im.ID, "digest", im.Digest, "layers", len(im.Layers),
		"unpacked", im.Unpacked, "cached", len(im.Layers)-im.Unpacked, "kept", kept)
	h.im = im
	task.ImageLayers = im.Layers
	task.Env = underEnv(im.Env, task.Env)
}

// release says the job no longer uses its image.
func (h *heldImage) release() {
	if h == nil {
		return
	}
	if err := h.im.Release(); err != nil {
		h.logger.Warn("release container image", "image", h.ref, "err", err)
	}
}

// CRIU restores a job only onto the root it was dumped from, so a job's
// checkpoint image names the container image it ran in, as
// imageRecordName: a restore elsewhere uses that image, by digest, even
// if the job's tag has moved on since.

// imageRecordName is the name of the container image's record in a
// checkpoint image.
const imageRecordName = "harrier-container-image.json"

// imageRecord names the container image a checkpoint was made in.
type imageRecord struct {
	Ref    string `json:"ref"`
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// record writes the image's record into the checkpoint image dir.
func (h *heldImage) record(dir string) error {
	b, err := json.Marshal(imageRecord{Ref: h.ref, ID: h.im.ID, Digest: h.im.Digest})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, imageRecordName), b, 0o600); err != nil {
		return fmt.Errorf("record the job's container image: %w", err)
	}
	return nil
}

// pin makes the job's image the one its checkpoint in dir was made in:
// when the job's reference now names another image (a tag that moved),
// the checkpoint's is pulled by digest from the same repository.
func (h *heldImage) pin(ctx context.Context, dir string, task *Task) error {
	b, err := os.ReadFile(filepath.Join(dir, imageRecordName))
	if err != nil {
		return fmt.Errorf("the checkpoint names no container image: %w", err)
	}
	var rec imageRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("the checkpoint's container image: %w", err)
	}
	if rec.ID == h.im.ID {
		return nil
	}
	r, err := name.ParseReference(h.src)
	if filepath.IsAbs(h.src) || err != nil {
		return fmt.Errorf("the container image %s is no longer the one the job was checkpointed in (%s)", h.ref, rec.ID)
	}
	pinned := r.Context().Digest(rec.Digest).String()
	im, err := h.runner.Image(ctx, pinned, h.creds)
	if err != nil {
		return fmt.Errorf("get the container image the job was checkpointed in: %w", err)
	}
	if im.ID != rec.ID {
		_ = im.Release()
		return fmt.Errorf("container image %s is %s, not %s as the checkpoint says", pinned, im.ID, rec.ID)
	}
	h.release()
	h.use(im, task, false)
	return nil
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

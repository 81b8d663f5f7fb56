package imagecache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ErrNoImage reports a source that holds no image for this machine.
var ErrNoImage = errors.New("no image")

// Open reads the image named by ref: a path to an OCI image layout
// directory or a docker-save tarball, or else a registry reference
// ("registry/name:tag", "name@sha256:…", "docker://…"). Nothing is
// fetched but the manifest and configuration.
func Open(ctx context.Context, ref string) (v1.Image, error) {
	if filepath.IsAbs(ref) {
		return openPath(ref)
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "docker://"))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	// Not tested here: no registry is reachable from the test machines.
	img, err := remote.Image(r, remote.WithContext(ctx),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	return img, nil
}

// openPath reads an image from a layout directory (its index's first
// image for this machine) or a docker-save tarball holding one image.
func openPath(p string) (v1.Image, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", p, err)
	}
	if !st.IsDir() {
		img, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			return nil, fmt.Errorf("image tarball %s: %w", p, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(p)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", p, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", p, err)
	}
	for _, d := range m.Manifests {
		if !d.MediaType.IsImage() {
			continue
		}
		if d.Platform != nil && (d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH) {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("image layout %s: %w", p, err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("image layout %s: %w for linux/%s", p, ErrNoImage, runtime.GOARCH)
}

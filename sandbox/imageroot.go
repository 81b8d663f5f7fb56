package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// imageRootDir, in a job's scratch directory, holds the upper and work
// directories of the overlay that is its root when it runs in its own
// image. It is root's alone (0700): the job sees its scratch directory
// at JobScratchDir but cannot enter this, and its writes to its root
// count against its disk like its other files.
const imageRootDir = ".harrier_root"

// imageRootsDir holds the mount points of the jobs' overlay roots.
func imageRootsDir(stateRoot string) string { return filepath.Join(stateRoot, "roots") }

// mountImageRoot mounts the overlay root of container id, running task t
// in its image, and returns its mount point.
func mountImageRoot(stateRoot, id string, t *Task) (string, error) {
	if t.ScratchDir == "" {
		return "", errors.New("a job in a container image needs a scratch directory")
	}
	target := filepath.Join(imageRootsDir(stateRoot), id)
	// A leftover of this container's name can only be a dead job's.
	if err := unmountImageRoot(target); err != nil {
		return "", err
	}
	upper := filepath.Join(t.ScratchDir, imageRootDir, "upper")
	work := filepath.Join(t.ScratchDir, imageRootDir, "work")
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("prepare image root: %w", err)
		}
	}
	// The upper directory is the image's root directory's stand-in: the
	// slot user must be able to walk into "/".
	if err := os.Chmod(upper, 0o755); err != nil {
		return "", fmt.Errorf("prepare image root: %w", err)
	}
	// overlayfs lists the top layer first.
	lower := slices.Clone(t.ImageLayers)
	slices.Reverse(lower)
	for _, l := range lower {
		if strings.ContainsAny(l, ":,") {
			return "", fmt.Errorf("image layer directory %q cannot be named in overlay options", l)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lower, ":"), upper, work)
	if err := unix.Mount("overlay", target, "overlay", unix.MS_NODEV|unix.MS_NOSUID, opts); err != nil {
		return "", fmt.Errorf("mount the job's image root: %w", err)
	}
	return target, nil
}

// unmountImageRoot unmounts and removes a job's overlay mount point, if
// there is one.
func unmountImageRoot(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount image root %s: %w", target, err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove image root %s: %w", target, err)
	}
	return nil
}

package startd

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/fusectl"
	"harrier.dev/harrier/sandbox"
	"harrier.dev/harrier/starter"
)

// Sandbox modes a startd runs its jobs in. The configured mode goes to
// each starter as it is; with none configured the starter, on the same
// machine, makes the same choice as chooseSandbox.
const (
	sandboxContainer = "container"
	sandboxProcess   = "process"
)

// checkSandbox checks the configured mode.
func checkSandbox(mode string) error {
	switch mode {
	case "", sandboxContainer, sandboxProcess:
		return nil
	}
	return fmt.Errorf("SANDBOX %q: want container, process or nothing", mode)
}

// chooseSandbox is the mode jobs run in, as advertised: the configured
// one, or with none configured containers when this machine can run them
// (root, cgroups mounted) and plain processes otherwise.
func chooseSandbox(mode string, logger *slog.Logger) string {
	if mode != "" {
		return mode
	}
	if err := sandbox.Available(); err != nil {
		logger.Info("jobs run as plain processes", "reason", err)
		return sandboxProcess
	}
	return sandboxContainer
}

// cleanupSlot removes the container and cgroups a starter of slot may
// have left behind, when it was killed, say: what its plain-process job
// left running too, in the slot's cgroup.
func cleanupSlot(executeDir, slot, mode string) error {
	if sandbox.Available() != nil {
		return nil
	}
	if mode == sandboxProcess {
		return sandbox.KillProcesses(sandbox.StateRoot(executeDir), slot)
	}
	err := unmountJobDirs(starter.JobDirsDir(executeDir), scratchPrefix+slot+".")
	areas := removeImageAreas(executeDir, "ckpt."+scratchPrefix+slot+".", "restore."+scratchPrefix+slot+".")
	return errors.Join(err, areas, sandbox.Cleanup(sandbox.StateRoot(executeDir), slot))
}

// unmountJobDirs detaches and removes the iofs mounts (the jobs' working
// directories) in dir whose names start with prefix: a starter that was
// killed could not unmount its own. Their connections are aborted first,
// which frees a starter stuck on its own mount (see run.sigkill).
func unmountJobDirs(dir, prefix string) error {
	errs := []error{abortJobDirs(dir, prefix)}
	mounts, err := jobDirs(dir, prefix)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, p := range mounts {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			continue
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// abortJobDirs aborts the connections of the iofs mounts in dir whose
// names start with prefix, leaving them mounted.
func abortJobDirs(dir, prefix string) error {
	mounts, err := jobDirs(dir, prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range mounts {
		if err := fusectl.Abort(p); err != nil && !errors.Is(err, fusectl.ErrNotMounted) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// jobDirs lists the mount points in dir whose names start with prefix.
// Reading dir does not reach into the mounts.
func jobDirs(dir, prefix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no container job ran here yet
	}
	if err != nil {
		return nil, fmt.Errorf("clean iofs mounts: %w", err)
	}
	var mounts []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			mounts = append(mounts, filepath.Join(dir, e.Name()))
		}
	}
	return mounts, nil
}

// cleanupSandbox removes every container and cgroup left in executeDir by
// the starters of a startd that did not shut down cleanly.
func cleanupSandbox(executeDir string) error {
	if sandbox.Available() != nil {
		return nil // nothing could have been made
	}
	err := unmountJobDirs(starter.JobDirsDir(executeDir), "")
	// Starters before the mount points had a directory of their own
	// (starter.JobDirsDir) mounted them in the execute directory itself.
	old := unmountJobDirs(executeDir, "iofs."+scratchPrefix)
	areas := removeImageAreas(executeDir, "ckpt."+scratchPrefix, "restore."+scratchPrefix)
	return errors.Join(err, old, areas, sandbox.CleanupAll(sandbox.StateRoot(executeDir)))
}

// removeImageAreas unmounts and removes the checkpoint image areas (see
// the starter's imageArea) whose names start with one of prefixes: a
// starter killed during a checkpoint or a restore leaves its area, a
// tmpfs that holds the image in memory until it is unmounted.
func removeImageAreas(executeDir string, prefixes ...string) error {
	entries, err := os.ReadDir(executeDir)
	if err != nil {
		return fmt.Errorf("clean checkpoint image areas: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(e.Name(), p) }) {
			continue
		}
		p := filepath.Join(executeDir, e.Name())
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			continue
		}
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(errs...)
}

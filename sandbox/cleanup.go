package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Cleanup removes everything slot's jobs left under stateRoot: it kills
// every process in the slot cgroup, removes the containers' state and
// image roots (a root kept for a next job too), and then the slot's
// cgroups. The startd calls it after each starter exits, so
// that a starter killed in the middle of a job leaves nothing behind.
// Cleaning a slot that left nothing is cheap and not an error.
func Cleanup(stateRoot, slot string) error {
	if err := checkSlot(slot); err != nil {
		return err
	}
	path := slotCgroupPath(stateRoot, slot)
	var errs []error
	if err := killCgroup(path); err != nil {
		errs = append(errs, err)
	}
	if err := KillProcesses(stateRoot, slot); err != nil {
		errs = append(errs, err)
	}
	for _, root := range allContainersDirs(stateRoot, slot) {
		entries, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), slot+"-") {
				errs = append(errs, destroyContainer(root, e.Name()))
			}
		}
		if root != diskContainersDir(stateRoot) {
			// The slot's own, on the memory file system, which would
			// outlive the state root; its Runner is not in use.
			_ = unix.Rmdir(root) // ENOTEMPTY: a container that could not go
		}
	}
	for _, dir := range allImageRootsDirs(stateRoot) {
		roots, _ := os.ReadDir(dir)
		for _, e := range roots {
			switch p := filepath.Join(dir, e.Name()); {
			case !strings.HasPrefix(e.Name(), slot+"-"):
			case strings.HasSuffix(e.Name(), ".mnt"): // its root's top layer, or one left without it
				errs = append(errs, os.RemoveAll(p))
			default:
				errs = append(errs, unmountImageRoot(p))
			}
		}
		if dir != diskImageRootsDir(stateRoot) {
			_ = unix.Rmdir(dir) // as the slots' state directories (ENOTEMPTY: another slot's)
		}
	}
	// The directory of a root kept for the slot's next job (see
	// keepRoot), now that its overlay is unmounted.
	if err := os.RemoveAll(heldRoot(stateRoot, slot)); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, removeCgroupTree(path))
	removeEmptyParents(stateRoot)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up slot %s: %w", slot, err)
	}
	return nil
}

// CleanupAll cleans up every slot under stateRoot, as a startd does when
// it starts, after a crash perhaps.
func CleanupAll(stateRoot string) error {
	roots, err := hierarchies()
	if err != nil {
		return fmt.Errorf("clean up %s: %w", stateRoot, err)
	}
	slots := map[string]bool{}
	for _, r := range roots {
		entries, _ := os.ReadDir(r + "/" + cgroupBase(stateRoot))
		for _, e := range entries {
			if e.IsDir() && checkSlot(e.Name()) == nil {
				slots[e.Name()] = true
			}
		}
	}
	entries, _ := os.ReadDir(diskContainersDir(stateRoot))
	for _, e := range entries {
		if slot, _, ok := strings.Cut(e.Name(), "-"); ok && checkSlot(slot) == nil {
			slots[slot] = true
		}
	}
	for _, slot := range memSlots(stateRoot) {
		if checkSlot(slot) == nil {
			slots[slot] = true
		}
	}
	var errs []error
	for slot := range slots {
		errs = append(errs, Cleanup(stateRoot, slot))
	}
	return errors.Join(errs...)
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// hostRootName, in the sandbox's directory on a memory file system (see
// memStateDir), is the root of the containers of jobs that run on the
// machine's own root: a bind of the host's root file system alone (no
// mount below it), read-only, nosuid, nodev and private, made once per
// machine and kept. A container's root is a recursive bind of it, one
// mount where there were a bind for each top-level directory of the
// host, each costing the container's init its path checks.
const hostRootName = "hostroot"

// errNoHostRoot means the machine has no memory file system for the
// sandbox's directory, or its root file system lacks a directory the
// container mounts its own at (/srv, say): the containers' roots are skeletons of the host's
// top-level directories, bound one by one (see prepareRootfs).
var errNoHostRoot = errors.New("no memory file system for the host root")

// hostRoot returns the containers' root on the machine's root file
// system, making its bind if it is not there, and the host's top-level
// directories that are mount points of their own, which it does not
// show and which are bound read-only in each container as before.
func hostRoot() (string, []string, error) {
	dir := memStateDir(memStateParents)
	if dir == "" {
		return "", nil, errNoHostRoot
	}
	// The container mounts its own at these places: a read-only root
	// must have them already.
	for _, m := range ownMounts {
		if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
			return "", nil, errNoHostRoot
		}
	}
	root := filepath.Join(dir, hostRootName)
	if err := bindHostRoot(root); err != nil {
		return "", nil, fmt.Errorf("prepare the containers' host root %s: %w", root, err)
	}
	mounts, err := hostTopMounts()
	if err != nil {
		return "", nil, fmt.Errorf("prepare the containers' host root: %w", err)
	}
	return root, mounts, nil
}

// bindHostRoot binds the host's root file system at root unless it is
// there; starters of several slots may try at once, one at a time under
// a lock.
func bindHostRoot(root string) error {
	if bound(root) {
		return nil
	}
	lock, err := os.OpenFile(root+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	if bound(root) {
		return nil
	}
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := unix.Mount("/", root, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	// Private: mounts made on the host later (iofs, image roots, other
	// jobs' scratch) never propagate into it, nor into the containers.
	if err := unix.Mount("", root, "", unix.MS_PRIVATE, ""); err != nil {
		_ = unix.Unmount(root, unix.MNT_DETACH)
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	if err := unix.Mount("", root, "", flags, ""); err != nil {
		_ = unix.Unmount(root, unix.MNT_DETACH)
		return err
	}
	return nil
}

// bound reports whether root is the host's root directory, bound there.
func bound(root string) bool {
	var host, here unix.Stat_t
	if unix.Stat("/", &host) != nil || unix.Stat(root, &here) != nil {
		return false
	}
	return host.Dev == here.Dev && host.Ino == here.Ino
}

// hostTopMounts lists the host's top-level directories that are mount
// points (another device than the root's), bar those the container makes
// for itself.
func hostTopMounts() ([]string, error) {
	var rootStat syscall.Stat_t
	if err := syscall.Stat("/", &rootStat); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		p := "/" + e.Name()
		if !e.IsDir() || under(p, ownMounts) {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			continue // gone since
		}
		if st.Dev != rootStat.Dev {
			dirs = append(dirs, p)
		}
	}
	return dirs, nil
}

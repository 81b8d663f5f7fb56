package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A job in its own image gets a root of its own: an overlay of the
// image's layers with an upper directory in its scratch directory. Most
// jobs never write to their root, and then the overlay is, when the job
// is gone, exactly what a fresh one would be: its upper directory still
// empty and untouched, its layers read-only. Making one (three
// directories on the execute machine's disk, the overlay's own probes
// of that disk at mount) and unmounting it (a sync of that disk) cost a
// job in its image about a millisecond of CPU more than a job on the
// machine's root. So a slot keeps such an untouched root for its next
// job in the same image, whose scratch directory it moves into, and
// mounts a new one only for a job whose predecessor wrote to its root,
// or ran in another image.

// imageRoot is the mounted overlay root of a job in its own image.
type imageRoot struct {
	target string   // its mount point
	upper  *os.Root // its upper directory, opened before any job ran
	// dir identifies its directory (makeImageRootDir), which a job's
	// user may rename within the scratch directory, by device and inode.
	dir [2]uint64
	// key is what the root is for: its image's layers and the mount
	// points in its top layer (see rootKey).
	key string
	// untouched is its upper directory's status as the first job got it.
	untouched unix.Stat_t
}

// rootKey says which overlay root serves a job: its image's layers and
// the directories the container mounts things at.
func rootKey(layers, mountPoints []string) string {
	return strings.Join(layers, "\x00") + "\x01" + strings.Join(mountPoints, "\x00")
}

// newImageRoot records the root mounted at target with the directory
// dir (see makeImageRootDir), as the job about to run gets it.
func newImageRoot(target string, dir *os.File, key string) (*imageRoot, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	upper, err := os.OpenRoot(inDir(dir, "upper"))
	if err != nil {
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	ir := &imageRoot{target: target, upper: upper, dir: [2]uint64{st.Dev, st.Ino}, key: key}
	if err := ir.stat(&ir.untouched); err != nil {
		upper.Close()
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	return ir, nil
}

// stat reads the status of the root's upper directory.
func (ir *imageRoot) stat(st *unix.Stat_t) error {
	f, err := ir.upper.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fstat(int(f.Fd()), st)
}

// untouchedSince reports whether no job has changed the root since it
// was mounted: nothing in its upper directory, whose own status is as it
// was. Any change a job makes to its root, however deep, puts something
// there (a copied-up directory, a whiteout) or changes that directory's
// times.
func (ir *imageRoot) untouchedSince() bool {
	var st unix.Stat_t
	if err := ir.stat(&st); err != nil {
		return false
	}
	u := &ir.untouched
	if st.Ino != u.Ino || st.Mode != u.Mode || st.Uid != u.Uid || st.Gid != u.Gid || st.Nlink != u.Nlink ||
		st.Mtim != u.Mtim || st.Ctim != u.Ctim {
		return false
	}
	f, err := ir.upper.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// unmount unmounts the root; its directory goes with the scratch
// directory it is in.
func (ir *imageRoot) unmount() error {
	ir.upper.Close()
	return unmountImageRoot(ir.target)
}

// heldRoot is where a slot keeps its untouched root's directory between
// jobs: beside the image roots, on the disk of the scratch directories
// (a move to another file system fails, and the root is not kept).
func heldRoot(stateRoot, slot string) string {
	return filepath.Join(diskImageRootsDir(stateRoot), slot+".held")
}

// keepRoot keeps the root of the slot's job that has just ended, whose
// container is gone, for the slot's next job, if no job changed it; it
// reports whether it did. Otherwise the caller unmounts it.
func (r *Runner) keepRoot(ir *imageRoot, scratch string) bool {
	if scratch == "" || !ir.untouchedSince() {
		return false
	}
	held := heldRoot(r.cfg.StateRoot, r.cfg.Slot)
	if err := os.MkdirAll(filepath.Dir(held), 0o700); err != nil {
		return false
	}
	if err := os.RemoveAll(held); err != nil {
		return false
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(scratch, ImageRootDir), unix.AT_FDCWD, held, unix.RENAME_NOREPLACE); err != nil {
		return false
	}
	// The job's user could have put a directory of theirs at that name:
	// keep the root only if what moved is the root's own directory.
	var st unix.Stat_t
	if err := unix.Lstat(held, &st); err != nil || st.Dev != ir.dir[0] || st.Ino != ir.dir[1] {
		_ = os.RemoveAll(held)
		return false
	}
	r.mu.Lock()
	old := r.kept
	r.kept = ir
	r.mu.Unlock()
	if old != nil { // cannot be: a slot runs one job at a time
		_ = old.unmount()
	}
	return true
}

// takeRoot gives the root the slot kept if it is the one key asks for,
// its directory moved into the job's scratch directory; nil if there is
// none (a root kept for another image is unmounted).
func (r *Runner) takeRoot(key, scratch string) *imageRoot {
	ir := r.takeKept()
	if ir == nil {
		return nil
	}
	if ir.key != key || scratch == "" {
		r.dropRoot(ir)
		return nil
	}
	// Whatever has the name in the new scratch directory (an input of
	// the job's, say) goes, as makeImageRootDir removes it.
	name := filepath.Join(scratch, ImageRootDir)
	err := os.RemoveAll(name)
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, heldRoot(r.cfg.StateRoot, r.cfg.Slot), unix.AT_FDCWD, name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		r.log.Warn("cannot reuse the slot's image root", "err", err)
		r.dropRoot(ir)
		return nil
	}
	return ir
}

// takeKept takes the root the slot kept, if any.
func (r *Runner) takeKept() *imageRoot {
	r.mu.Lock()
	defer r.mu.Unlock()
	ir := r.kept
	r.kept = nil
	return ir
}

// dropRoot unmounts a kept root and removes its directory.
func (r *Runner) dropRoot(ir *imageRoot) {
	if err := errors.Join(ir.unmount(), os.RemoveAll(heldRoot(r.cfg.StateRoot, r.cfg.Slot))); err != nil {
		r.log.Warn("remove the slot's kept image root", "err", err)
	}
}

// dropKeptRoot unmounts the root the slot kept, if any: the next job
// gets a root made afresh.
func (r *Runner) dropKeptRoot() {
	if ir := r.takeKept(); ir != nil {
		r.dropRoot(ir)
	}
}

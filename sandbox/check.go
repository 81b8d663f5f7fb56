//lint:file-ignore ST1005 these errors are hold reasons, read by the job's owner and written as HTCondor writes them.

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkTask finds what would keep a task from starting, with a message
// meant for the job's owner.
func checkTask(t *Task, id identity) error {
	if !filepath.IsAbs(t.Path) {
		return fmt.Errorf("Failed to execute '%s': not an absolute path", t.Path)
	}
	// A program of the job's own image is looked for there when the job
	// starts, not on this machine.
	if inImage := len(t.ImageLayers) > 0 && !under(filepath.Clean(t.Path), []string{t.ScratchDir}); inImage {
		return checkDirs(t)
	}
	st, err := os.Stat(t.Path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("Failed to execute '%s': %v", t.Path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("Failed to execute '%s': is a directory", t.Path)
	}
	if !executableBy(st, id) {
		return fmt.Errorf("Failed to execute '%s': permission denied (not executable by %s)", t.Path, id.name)
	}
	return checkDirs(t)
}

// checkDirs checks the task's directories and limits.
func checkDirs(t *Task) error {
	dir := t.Dir
	if t.DirSource != "" {
		if !filepath.IsAbs(t.Dir) {
			return fmt.Errorf("Bad working directory '%s': not an absolute path", t.Dir)
		}
		if filepath.Clean(t.Dir) == JobScratchDir {
			return fmt.Errorf("Bad working directory '%s': the job's scratch directory is there in its container", t.Dir)
		}
		dir = t.DirSource
	}
	for _, d := range []string{dir, t.ScratchDir} {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return fmt.Errorf("Bad working directory '%s': not an absolute path", d)
		}
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("Bad working directory '%s': %v", d, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return fmt.Errorf("Bad working directory '%s': not a directory", d)
		}
	}
	if t.Dir == "" {
		return errors.New("Bad working directory: none given")
	}
	switch {
	case t.MemoryMB < 0:
		return fmt.Errorf("Cannot meet request_memory of %d megabytes: negative", t.MemoryMB)
	case t.MemoryMB > 0 && t.MemoryMB < minMemoryMB:
		return fmt.Errorf("Cannot meet request_memory of %d megabytes: the smallest a job can run in is %d", t.MemoryMB, minMemoryMB)
	case t.Cpus < 0:
		return fmt.Errorf("Cannot meet request_cpus of %d: negative", t.Cpus)
	case t.Cpus > t.machineCpus():
		return fmt.Errorf("Cannot meet request_cpus of %d: this machine has %d", t.Cpus, t.machineCpus())
	case t.DiskKB < 0:
		return fmt.Errorf("Cannot meet request_disk of %d kilobytes: negative", t.DiskKB)
	}
	return nil
}

// executableBy reports whether the file's mode lets the user execute it.
func executableBy(st os.FileInfo, id identity) bool {
	return st.Mode().IsRegular() && xBit(st, id)
}

// searchableBy reports whether the directory's mode lets the user
// search it (root always may).
func searchableBy(st os.FileInfo, id identity) bool {
	return st.IsDir() && (id.uid == 0 || xBit(st, id))
}

// xBit reports whether the execute (search) bit that applies to the user
// is set: the owner's, the group's or others', as the kernel picks them
// for a user without supplementary groups; for root, any of them.
func xBit(st os.FileInfo, id identity) bool {
	mode := st.Mode()
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return mode&0o111 != 0
	}
	switch {
	case id.uid == 0:
		return mode&0o111 != 0
	case int(sys.Uid) == id.uid:
		return mode&0o100 != 0
	case int(sys.Gid) == id.gid:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

// checkDirTop checks that this machine has the top-level directory top
// in which the job's directory dir is shown (see dirTop).
func checkDirTop(dir, top string) error {
	if st, err := os.Stat(top); err != nil || !st.IsDir() {
		return fmt.Errorf("Bad working directory '%s': this machine has no directory %s to show it in", dir, top)
	}
	return nil
}

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	cgroups "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// cgroupTop is the first path element of every Harrier cgroup, under the
// cgroup of the process that makes it.
const cgroupTop = "harrier"

// cgroupBase is the cgroup, relative to the caller's own, of every slot
// of one state root: harrier/<hash of the state root>.
func cgroupBase(stateRoot string) string {
	return cgroupTop + "/" + stateRootKey(stateRoot)
}

// stateRootKey names a state root's own things outside it (its cgroups,
// its containers' state): a hash of its path.
func stateRootKey(stateRoot string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(stateRoot)))
	return hex.EncodeToString(sum[:6])
}

// slotCgroupPath is the slot cgroup's path relative to the caller's own
// cgroup.
func slotCgroupPath(stateRoot, slot string) string {
	return cgroupBase(stateRoot) + "/" + slot
}

// errNoCgroups means the machine has no usable cgroup file system.
var errNoCgroups = errors.New("no cgroup file system mounted")

// ensureSlotCgroup creates the slot cgroup if it is missing. Another
// slot's clean-up may remove the state root's cgroup, empty for a moment,
// between the creation of a parent and of its child: the creation is
// tried again then.
func ensureSlotCgroup(path string) error {
	var err error
	for range 5 {
		if err = makeSlotCgroup(path); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return err
}

func makeSlotCgroup(path string) error {
	switch cgroups.Mode() {
	case cgroups.Unavailable:
		return errNoCgroups
	case cgroups.Unified:
		group, err := unifiedGroup(path)
		if err != nil {
			return err
		}
		if _, err := cgroup2.NewManager("/sys/fs/cgroup", group, &cgroup2.Resources{}); err != nil {
			return fmt.Errorf("create slot cgroup %s: %w", group, err)
		}
	default:
		if _, err := cgroup1.New(cgroup1.NestedPath(path), &specs.LinuxResources{}); err != nil {
			return fmt.Errorf("create slot cgroup %s: %w", path, err)
		}
		return cloneCpusets(path)
	}
	return nil
}

// cloneCpusets has the kernel give each job's cpuset cgroup, as it is
// made below the slot's (cgroup v1), the slot's cores and memory nodes.
// Otherwise libcontainer writes them, and each write to a cpuset.cpus
// rebuilds the machine's scheduler domains, walking every cpuset and
// task: milliseconds a job on a busy machine. A job given its own cores
// (Task.Cpuset) still has them written.
func cloneCpusets(path string) error {
	roots, err := hierarchies()
	if err != nil {
		return fmt.Errorf("slot cgroup %s: %w", path, err)
	}
	for _, root := range roots {
		dir := filepath.Join(root, path)
		if _, err := os.Stat(filepath.Join(dir, "cpuset.cpus")); err != nil {
			continue // not the cpuset hierarchy
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.clone_children"), []byte("1"), 0o644); err != nil {
			return fmt.Errorf("slot cgroup %s: %w", path, err)
		}
	}
	return nil
}

// unifiedGroup is path under the caller's own cgroup v2.
func unifiedGroup(path string) (string, error) {
	own, err := cgroup2.NestedGroupPath("")
	if err != nil {
		return "", fmt.Errorf("own cgroup: %w", err)
	}
	return filepath.Join(own, path), nil
}

// killCgroup kills every process in the cgroup at path (relative to the
// caller's own cgroup) and below it, and waits until they are gone. A
// missing cgroup has nothing to kill.
func killCgroup(path string) error {
	switch cgroups.Mode() {
	case cgroups.Unavailable:
		return nil
	case cgroups.Unified:
		group, err := unifiedGroup(path)
		if err != nil {
			return err
		}
		m, err := cgroup2.Load(group)
		if err != nil {
			return nil
		}
		if err := m.Kill(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("kill cgroup %s: %w", group, err)
		}
		return nil
	}
	cg, err := cgroup1.Load(cgroup1.NestedPath(path))
	if err != nil {
		return nil // no such cgroup
	}
	// Frozen, nothing can fork while we collect the processes; SIGKILL
	// takes effect once thawed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, err := cg.Processes(cgroup1.Freezer, true)
		if err != nil || len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: %d processes still there", path, len(procs))
		}
		_ = cg.Freeze()
		if procs, err = cg.Processes(cgroup1.Freezer, true); err == nil {
			for _, p := range procs {
				_ = unix.Kill(p.Pid, unix.SIGKILL)
			}
		}
		_ = cg.Thaw()
		time.Sleep(5 * time.Millisecond)
	}
}

// removeCgroupTree removes the cgroup at path (relative to the caller's own
// cgroup) and every cgroup below it, in every hierarchy. The cgroups must
// be empty of processes.
func removeCgroupTree(path string) error {
	roots, err := hierarchies()
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", path, err)
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, path), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first: a cgroup goes only once its children have.
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := rmdirRetry(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup directory; a cgroup whose last
// process has just died can be busy for a moment.
func rmdirRetry(dir string) error {
	var err error
	for i := range 50 {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// removeEmptyParents removes the cgroup harrier/<hash> if no slot of the
// state root uses it any more. The top cgroup, harrier, stays: the
// startds of a machine share it, and one removing it while another makes
// its slots' cgroups below it would make that fail.
func removeEmptyParents(stateRoot string) {
	roots, err := hierarchies()
	if err != nil {
		return
	}
	for _, root := range roots {
		_ = unix.Rmdir(filepath.Join(root, cgroupBase(stateRoot))) // ENOTEMPTY/EBUSY: still in use
	}
}

package sandbox

import (
	"errors"
	"fmt"
	"os"

	cgroups "github.com/containerd/cgroups/v3"
)

// Available reports why containers cannot run on this machine, or nil if
// they can: it takes root (namespaces, mounts, cgroups) and a mounted
// cgroup file system with the memory, cpu, pids and freezer controllers.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	switch cgroups.Mode() {
	case cgroups.Unavailable:
		return errNoCgroups
	case cgroups.Unified:
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		return nil
	}
	for _, c := range []string{"memory", "cpu", "pids", "freezer"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + c); err != nil {
			return fmt.Errorf("cgroup v1 controller %s not mounted", c)
		}
	}
	return nil
}

// swapAccounting reports whether a memory limit can cover swap as well,
// so that a job over its limit is killed rather than swapped out.
func swapAccounting() bool {
	if cgroups.Mode() == cgroups.Unified {
		return true
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}

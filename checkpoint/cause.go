package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrRlimits says CRIU could not read the resource limits of the job's
// processes. prlimit(2) on a process of another user needs
// CAP_SYS_RESOURCE, which root lacks on some machines (VMs that drop it
// from the bounding set); CRIU as scripts/setup builds it reads
// /proc/PID/limits instead, other builds give up.
var ErrRlimits = errors.New("this machine's CRIU cannot read the resource limits of another user's processes " +
	"(root lacks CAP_SYS_RESOURCE, and only the CRIU scripts/setup builds works around it)")

// criuFailure adds the cause of a failed CRIU call to err where CRIU's
// log (name, in workDir) shows one that a caller can act on.
func criuFailure(workDir, name string, err error) error {
	b, rerr := os.ReadFile(filepath.Join(workDir, name))
	if rerr != nil {
		return err
	}
	if bytes.Contains(b, []byte("Can't get rlimit")) {
		return fmt.Errorf("%w: %w", ErrRlimits, err)
	}
	return err
}

package sandbox

import (
	"errors"
	"fmt"
	"os"

	devcfg "github.com/opencontainers/cgroups/devices/config"
	"golang.org/x/sys/unix"
)

// ErrGPUCheckpoint refuses checkpoints of jobs that hold devices (GPUs):
// CRIU cannot save or restore a device's state.
var ErrGPUCheckpoint = errors.New("jobs holding GPUs cannot be checkpointed: CRIU cannot save a device's state")

// hostDevices describes the host's device nodes at paths for a job's
// container: each is made at the same path inside it, with the host's
// mode and owner, and the device cgroup lets the job read, write and
// create it; no other device beyond the standard ones (null, zero,
// random, tty, ...) is reachable.
func hostDevices(paths []string) ([]*devcfg.Device, error) {
	var out []*devcfg.Device
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, fmt.Errorf("device %s: %w", p, err)
		}
		var typ devcfg.Type
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			typ = devcfg.CharDevice
		case unix.S_IFBLK:
			typ = devcfg.BlockDevice
		default:
			return nil, fmt.Errorf("device %s: not a device node", p)
		}
		out = append(out, &devcfg.Device{
			Rule: devcfg.Rule{Type: typ, Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev))),
				Permissions: "rwm", Allow: true},
			Path:     p,
			FileMode: os.FileMode(st.Mode & 0o777),
			Uid:      st.Uid,
			Gid:      st.Gid,
		})
	}
	return out, nil
}

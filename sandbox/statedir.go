package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// memStateParents are where the containers' state may go, in order of
// preference: runc's own choice (/run, a tmpfs on most hosts), then
// /dev/shm. A container's state is written several times while it starts
// (state.json, its exec FIFO, its directory); on a memory file system
// that costs a few microseconds, while on a disk file system busy with
// files made and removed (an execute machine's) it costs milliseconds a
// job. The state need not survive a reboot: the containers do not.
var memStateParents = []string{"/run", "/dev/shm"}

// memStateName is the directory, in one of memStateParents, holding the
// containers' state of every state root of this machine: root's own,
// closed to others (0700), which matters in the world-writable /dev/shm.
const memStateName = "harrier-sandbox"

// containersDir holds libcontainer's state of the containers of a slot
// of stateRoot, one directory per container: in a directory of the
// slot's own, in a directory of root's on a memory file system (see
// memStateParents), if there is one, else in the state root's directory
// for all its slots. It creates nothing but that directory of root's.
func containersDir(stateRoot, slot string) string {
	if dir := memStateDir(memStateParents); dir != "" {
		return filepath.Join(dir, stateRootKey(stateRoot)+"-"+slot)
	}
	return diskContainersDir(stateRoot)
}

// diskContainersDir is where the containers' state goes on a machine
// without a usable memory file system.
func diskContainersDir(stateRoot string) string { return filepath.Join(stateRoot, "containers") }

// allContainersDirs are the places a container of a slot of stateRoot
// may have left its state: where it goes now and where it went on a
// machine whose memory file system was not usable then.
func allContainersDirs(stateRoot, slot string) []string {
	dirs := []string{diskContainersDir(stateRoot)}
	if dir := containersDir(stateRoot, slot); dir != dirs[0] {
		dirs = append(dirs, dir)
	}
	return dirs
}

// memSlots are the slots of stateRoot with a state directory on the
// memory file system.
func memSlots(stateRoot string) []string {
	dir := memStateDir(memStateParents)
	if dir == "" {
		return nil
	}
	prefix := filepath.Join(dir, stateRootKey(stateRoot)) + "-"
	found, _ := filepath.Glob(prefix + "*")
	slots := make([]string, 0, len(found))
	for _, f := range found {
		slots = append(slots, strings.TrimPrefix(f, prefix))
	}
	return slots
}

// memStateDir makes, or finds, the directory memStateName in the first
// of parents that is a memory file system, and returns it if it
// is root's own and closed to others. Anything else there (another
// user's directory, a symbolic link) is not used: the state then goes
// to the state root.
func memStateDir(parents []string) string {
	for _, parent := range parents {
		var st unix.Statfs_t
		if err := unix.Statfs(parent, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
			continue
		}
		dir := filepath.Join(parent, memStateName)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			continue
		}
		if sys, ok := fi.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
			continue
		}
		return dir
	}
	return ""
}

package transferplugin

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writes of a plugin are confined with Landlock: the kernel lets the
// plugin, and every process it starts, create, change or remove files
// only beneath the directories it is given, whatever its user may do
// elsewhere (world-writable /tmp included). Reading is not restricted:
// plugins read the machine's programs and libraries.

// writeAccess are the Landlock rights that change the file system, by the
// first ABI version that knows each.
var writeAccess = []struct {
	abi    int
	rights uint64
}{
	{1, unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM},
	{2, unix.LANDLOCK_ACCESS_FS_REFER},
	{3, unix.LANDLOCK_ACCESS_FS_TRUNCATE},
}

// fileRights are the rights that apply to a file rather than a directory.
const fileRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// ErrNoLandlock: the kernel cannot confine a plugin's writes.
var ErrNoLandlock = errors.New("the kernel has no Landlock")

// confineWrites restricts the calling OS thread, and every process it
// starts from now on, to writing beneath dirs and to the files devices
// (such as /dev/null). The restriction cannot be lifted: the caller must
// lock the thread and let it end with its goroutine.
func confineWrites(dirs, devices []string) error {
	v, err := landlockABI()
	if err != nil {
		return err
	}
	var handled uint64
	for _, w := range writeAccess {
		if v >= w.abi {
			handled |= w.rights
		}
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	// Only the file-system field: its size is what every ABI version knows.
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr.Handled_access_fs), 0)
	if errno != 0 {
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(p string, rights uint64) error {
		f, err := os.OpenFile(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(f.Fd())}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock rule for %s: %w", p, errno)
		}
		return nil
	}
	for _, d := range dirs {
		if err := add(d, handled); err != nil {
			return err
		}
	}
	for _, d := range devices {
		if err := add(d, handled&fileRights); err != nil {
			return err
		}
	}
	// Without CAP_SYS_ADMIN the kernel asks for no_new_privs first; it is
	// the thread's own, as is the restriction.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}

// landlockABI is the kernel's Landlock ABI version.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("%w: %v", ErrNoLandlock, errno)
	}
	return int(v), nil
}

package transferplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A plugin is confined with Landlock: the kernel lets the plugin, and
// every process it starts, create, change or remove files only beneath
// the directories it is given, whatever its user may do elsewhere
// (world-writable /tmp included), and signal no process it did not
// start (another job's, of the same slot user). It may read the machine's programs,
// libraries and the rest, but nothing of one directory (the execute
// directory) other than what it was given there: the other jobs' scratch
// directories are there, and they belong to the same slot user.

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

// Landlock's scopes (ABI 6): a confined process may not signal, or
// connect to an abstract Unix socket of, a process outside its domain.
const (
	scopeABI                = 6
	scopeAbstractUnixSocket = 0x1 // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	scopeSignal             = 0x2 // LANDLOCK_SCOPE_SIGNAL
)

// fileRights are the rights that apply to a file rather than a directory.
const fileRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_READ_FILE

// readAccess are the Landlock rights that read (ABI 1).
const readAccess = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR

// ErrNoLandlock: the kernel cannot confine a plugin's writes.
var ErrNoLandlock = errors.New("the kernel has no Landlock")

// confine restricts the calling OS thread, and every process it starts
// from now on, to writing beneath dirs and to the files devices (such as
// /dev/null); with hide, to reading nothing beneath hide but dirs. The
// restriction cannot be lifted: the caller must lock the thread and let
// it end with its goroutine.
func confine(dirs, devices []string, hide string) error {
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
	if hide != "" {
		handled |= readAccess
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	// Only the file-system field, whose size every ABI version knows; and
	// where the kernel can, the scopes after the network field: the plugin
	// runs as the slot user, as the other jobs of the machine do, and may
	// then neither signal their processes nor reach their abstract sockets.
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if v >= scopeABI {
		attr.Scoped = scopeSignal | scopeAbstractUnixSocket
		size = unsafe.Offsetof(attr.Scoped) + unsafe.Sizeof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(p string, rights uint64) error {
		// Not through a link, which another user may have put in a
		// world-writable directory (see readableAround) after it was seen.
		f, err := os.OpenFile(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
	if hide != "" {
		if err := readableAround(hide, add); err != nil {
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

// readableAround lets everything be read but what is beneath hide.
// Landlock only grants: the rules grant reading each entry beside the
// path from / down to hide. An entry that is a symbolic link gets no rule
// of its own: what it leads to is read by its own place's rules.
func readableAround(hide string, add func(p string, rights uint64) error) error {
	for dir := filepath.Clean(hide); dir != "/" && dir != "."; {
		parent := filepath.Dir(dir)
		entries, err := os.ReadDir(parent)
		if err != nil {
			return fmt.Errorf("landlock rules beside %s: %w", dir, err)
		}
		for _, e := range entries {
			p := filepath.Join(parent, e.Name())
			if p == dir || e.Type()&fs.ModeSymlink != 0 {
				continue
			}
			rights := uint64(readAccess)
			if !e.IsDir() {
				rights = unix.LANDLOCK_ACCESS_FS_READ_FILE
			}
			if err := add(p, rights); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ELOOP) {
				return err
			}
		}
		dir = parent
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

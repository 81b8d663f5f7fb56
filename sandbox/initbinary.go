package sandbox

/*
#cgo CFLAGS: -Wall
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The runc release whose libcontainer harrier and harrier-init are built
// with: the installed init's directory is named by it, so that a harrier
// never hands over to an init that speaks another release's protocol.
// TestInitNamesTheRuncRelease keeps it equal to go.mod's.
#define HARRIER_INIT_RUNC "v1.5.2"
#define HARRIER_INIT_DIR "/run/harrier-sandbox/init-runc-" HARRIER_INIT_RUNC
#define HARRIER_INIT_PATH HARRIER_INIT_DIR "/init"

// harrier_init_handoff runs before the Go runtime, and before nsenter's
// nsexec (constructors with a priority run before those without): in a
// container's init, re-executed by libcontainer as "harrier init", it
// executes the small init installed by InstallInit in its place, with
// the same arguments, environment and descriptors. Without one, or if it
// cannot run, it returns and this binary is the init, as it would be
// anyway.
//
// The init's Go runtime lives only until the job's program replaces it,
// on one thread's work: it gets one processor and no garbage collector
// (GOMAXPROCS=1, GOGC=off), which spares each container start the
// runtime's idle threads and collections. libcontainer clears the
// init's environment before it runs the job with the job's own.
__attribute__((constructor(200))) static void harrier_init_handoff(int argc, char **argv, char **envp) {
	if (argc < 2 || strcmp(argv[1], "init") != 0 || getenv("_LIBCONTAINER_INITPIPE") == NULL)
		return;
	size_t n = 0;
	while (envp[n] != NULL)
		n++;
	char **env = malloc((n + 3) * sizeof(char *));
	if (env == NULL)
		return;
	memcpy(env, envp, n * sizeof(char *));
	env[n] = "GOMAXPROCS=1";
	env[n + 1] = "GOGC=off";
	env[n + 2] = NULL;
	execve(HARRIER_INIT_PATH, argv, env);
	free(env);
}

static const char *harrier_init_path(void) { return HARRIER_INIT_PATH; }
static const char *harrier_init_runc(void) { return HARRIER_INIT_RUNC; }
*/
import "C"

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// initPackage is the main package of the small init.
const initPackage = "harrier.dev/harrier/cmd/harrier-init"

// InitPath is where InstallInit puts the small init, and where every
// container's init looks for it.
func InitPath() string { return C.GoString(C.harrier_init_path()) }

// initRunc is the runc release named in InitPath.
func initRunc() string { return C.GoString(C.harrier_init_runc()) }

// InstallInit makes the container init binary src (harrier-init, built
// from this module) the first process of every container this machine
// starts from now on, in place of the whole harrier binary that
// libcontainer re-executes. It copies src into a memory file system of
// its own at InitPath's directory and makes that read-only, so that no
// process, root in a container included, can change the binary a later
// container's init runs (CVE-2019-5736 is about such a write). src must
// be root's, writable by no one else along its path, and built with the
// runc release InitPath names and this binary's build tags. Calling it
// again when the init is installed does nothing; it is safe to call from
// several processes at once.
func InstallInit(src string) error {
	if os.Geteuid() != 0 {
		return errors.New("install container init: needs root")
	}
	if err := checkInitBinary(src, true); err != nil {
		return fmt.Errorf("install container init %s: %w", src, err)
	}
	dir := filepath.Dir(InitPath())
	parent := filepath.Dir(dir)
	if err := os.Mkdir(parent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("install container init: %w", err)
	}
	if err := checkRootDir(parent); err != nil {
		return fmt.Errorf("install container init: %w", err)
	}
	// One installer at a time: the lock is the parent directory's own.
	lock, err := os.Open(parent)
	if err != nil {
		return fmt.Errorf("install container init: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("install container init: lock %s: %w", parent, err)
	}
	if initInstalled(dir) {
		return nil
	}
	if err := mountInit(src, dir); err != nil {
		return fmt.Errorf("install container init: %w", err)
	}
	return nil
}

// checkInitBinary refuses an init that root should not run: one another
// user could have changed (checked when owned is set), or one built from
// something else.
func checkInitBinary(src string, owned bool) error {
	if !filepath.IsAbs(src) {
		return errors.New("not an absolute path")
	}
	if owned {
		if err := checkRootPath(src); err != nil {
			return err
		}
	}
	bi, err := buildinfo.ReadFile(src)
	if err != nil {
		return fmt.Errorf("not a Go binary with build information: %w", err)
	}
	if bi.Path != initPackage {
		return fmt.Errorf("built from %s, not %s", bi.Path, initPackage)
	}
	runc := ""
	for _, d := range bi.Deps {
		if d.Path == "github.com/opencontainers/runc" {
			runc = d.Version
		}
	}
	if runc != initRunc() {
		return fmt.Errorf("built with runc %s, harrier with %s: rebuild both from one tree", runc, initRunc())
	}
	if self, ok := debug.ReadBuildInfo(); ok {
		if a, b := buildSetting(self, "-tags"), buildSetting(bi, "-tags"); a != b {
			return fmt.Errorf("built with tags %q, harrier with %q: rebuild both alike", b, a)
		}
	}
	return nil
}

func buildSetting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// checkRootPath makes sure that only root can change the file at path:
// it and every directory above it are root's and writable by no one
// else, but for a sticky directory (/tmp) whose next entry is root's.
func checkRootPath(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	if st.Uid != 0 || st.Mode&0o022 != 0 {
		return fmt.Errorf("owned by uid %d with mode %o: must be root's and writable by root alone", st.Uid, st.Mode&0o7777)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		var ds unix.Stat_t
		if err := unix.Stat(dir, &ds); err != nil {
			return err
		}
		if ds.Uid != 0 {
			return fmt.Errorf("directory %s is uid %d's, not root's", dir, ds.Uid)
		}
		if ds.Mode&0o022 != 0 && ds.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("directory %s (mode %o) is writable by others", dir, ds.Mode&0o7777)
		}
		if dir == "/" {
			return nil
		}
	}
}

// checkRootDir makes sure dir is a directory of root's closed to others.
func checkRootDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not a directory of root's closed to others", dir)
	}
	return nil
}

// initInstalled reports whether dir is a read-only file system of its
// own holding an executable init built as this binary was (another
// harrier's of the same runc release may have installed it).
func initInstalled(dir string) bool {
	var st, pst unix.Stat_t
	var fsst unix.Statfs_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &pst) != nil || st.Dev == pst.Dev {
		return false
	}
	if unix.Statfs(dir, &fsst) != nil || fsst.Flags&unix.ST_RDONLY == 0 {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, "init"))
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0 && checkInitBinary(filepath.Join(dir, "init"), false) == nil
}

// mountInit puts a copy of src at dir/init on a new memory file system
// at dir, made read-only once the copy is complete. The copy is renamed
// into place, so that an init looking for it meanwhile finds either
// nothing (and runs as harrier) or the whole binary.
func mountInit(src, dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount stale %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=0755,size=%d,nr_inodes=8", fi.Size()+1<<20)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount %s: %w", dir, err)
	}
	if err := copyInit(src, filepath.Join(dir, "init")); err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return err
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return fmt.Errorf("make %s read-only: %w", dir, err)
	}
	return nil
}

func copyInit(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".new"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

package startd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"harrier.dev/harrier/starter"
)

// stuckStarterEnv makes the test binary a starter that gets stuck on its
// own iofs mount (see TestKillFreesAStarterStuckOnItsMount).
const stuckStarterEnv = "HARRIER_STARTD_TEST_STUCK_STARTER"

func TestMain(m *testing.M) {
	if os.Getenv(stuckStarterEnv) != "" {
		stuckStarter()
	}
	os.Exit(m.Run())
}

// stuckRoot is a file system whose root answers no GETATTR: its server
// takes the request and says "ready".
type stuckRoot struct{ fs.Inode }

func (*stuckRoot) Getattr(context.Context, fs.FileHandle, *fuse.AttrOut) syscall.Errno {
	fmt.Fprintln(os.Stderr, "ready")
	select {}
}

// stuckStarter mounts stuckRoot where a starter of slot1 mounts its job's
// directory, in the execute directory above its working directory (its
// scratch directory), and stats it, as a starter does its iofs mount.
func stuckStarter() {
	scratch, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	dir := starter.JobDirsDir(filepath.Dir(scratch))
	mnt := filepath.Join(dir, scratchPrefix+"slot1.dir")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		panic(err)
	}
	if _, err := fs.Mount(mnt, &stuckRoot{}, &fs.Options{MountOptions: fuse.MountOptions{DirectMount: true}}); err != nil {
		panic(err)
	}
	var st unix.Stat_t
	err = unix.Stat(mnt, &st)
	panic(fmt.Sprintf("stat of a mount that never answers returned: %v", err))
}

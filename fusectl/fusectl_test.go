package fusectl

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:         "/mnt/plain",
		`/mnt/with\040space`: "/mnt/with space",
		`/mnt/tab\011x`:      "/mnt/tab\tx",
		`/mnt/back\134slash`: `/mnt/back\slash`,
		`/mnt/short\04`:      `/mnt/short\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMountMinorNotFUSE: neither a plain directory nor another file
// system's mount point has a FUSE connection.
func TestMountMinorNotFUSE(t *testing.T) {
	for _, p := range []string{"/proc", t.TempDir()} {
		if _, err := mountMinor(p); !errors.Is(err, ErrNotMounted) {
			t.Errorf("mountMinor(%s): %v, want ErrNotMounted", p, err)
		}
	}
}

// stuckRoot is a FUSE file system whose root answers no GETATTR until
// released.
type stuckRoot struct {
	fs.Inode
	once    sync.Once
	asked   chan struct{}
	release chan struct{}
}

func (r *stuckRoot) Getattr(context.Context, fs.FileHandle, *fuse.AttrOut) syscall.Errno {
	r.once.Do(func() { close(r.asked) })
	<-r.release
	return syscall.EIO
}

// TestAbortFreesAWaitingCaller: a stat(2) waiting for a server that will
// not answer returns once the connection is aborted.
func TestAbortFreesAWaitingCaller(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE and writing fusectl need root")
	}
	mnt := t.TempDir()
	root := &stuckRoot{asked: make(chan struct{}), release: make(chan struct{})}
	if _, err := fs.Mount(mnt, root, &fs.Options{MountOptions: fuse.MountOptions{DirectMount: true}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(root.release)
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
	})
	stat := make(chan error, 1)
	go func() {
		var st unix.Stat_t
		stat <- unix.Stat(mnt, &st)
	}()
	<-root.asked
	select {
	case err := <-stat:
		t.Fatalf("stat returned before the abort: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := Abort(mnt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stat:
		if !errors.Is(err, unix.ECONNABORTED) && !errors.Is(err, unix.ENOTCONN) {
			t.Errorf("stat after the abort: %v, want ECONNABORTED", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stat still waits after the abort")
	}
	if err := Abort(t.TempDir()); !errors.Is(err, ErrNotMounted) {
		t.Errorf("Abort of a plain directory: %v, want ErrNotMounted", err)
	}
}

package checkpoint

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// inPrivateMounts calls fn on an OS thread of its own, in a copy of this
// process's mount namespace from which no mount or unmount propagates
// back (every mount a slave of the host's), and returns fn's error.
//
// A restore needs it: libcontainer prepares CRIU's root by binding each
// bind mount's source into the container's root file system,
// recursively, in the caller's mount namespace, and lazily unmounts them
// afterwards; CRIU, started from the same thread, mounts its cgroup yard
// there too. Where a source holds shared mounts, those unmounts propagate
// to the host and take its own mounts away: /run/netns/NAME, which
// "ip netns" makes shared (a network namespace that only that name kept
// alive dies, and with it every veth pair into it), or anything under /
// on a host where / is shared, as systemd makes it. In a slave copy the
// preparation and its undoing stay private, and the host's mounts (the
// job's FUSE mount among them) are all there.
//
// The thread is never handed back to the Go scheduler: it ends with fn's
// goroutine, so nothing else ever runs in that namespace. Children fn
// starts (CRIU, and the job CRIU restores as its sibling) stay children
// of this process.
func inPrivateMounts(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("private mount namespace: %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			errc <- fmt.Errorf("private mount namespace: make / a slave: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

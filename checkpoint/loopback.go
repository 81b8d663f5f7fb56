package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// emptyNs is the CRIU namespace mask that leaves the network namespace
// out of the image (and restores a fresh one), if loopbackOnly.
func emptyNs(loopbackOnly bool) uint32 {
	if loopbackOnly {
		return unix.CLONE_NEWNET
	}
	return 0
}

// loopbackUp brings up the loopback interface in the network namespace
// of the restored process p: CRIU made the namespace afresh, and a new
// namespace's loopback is down.
func loopbackUp(p *libcontainer.Process) error {
	pid, err := p.Pid()
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		// The thread enters the job's namespace. If it cannot come back,
		// it stays locked and ends with the goroutine.
		runtime.LockOSThread()
		err, back := inNetns(pid, func() error { return ifUp("lo") })
		if back {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	return nil
}

// inNetns runs fn in the network namespace of pid on the calling (locked)
// thread, and reports whether the thread is back in its own namespace.
func inNetns(pid int, fn func() error) (error, bool) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err, true
	}
	defer self.Close()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return err, true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter the job's network namespace: %w", err), true
	}
	err = fn()
	if serr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); serr != nil {
		return fmt.Errorf("leave the job's network namespace: %w", serr), false
	}
	return err, true
}

// ifUp sets the up flag of the interface name in this thread's network
// namespace.
func ifUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("flags of %s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring %s up: %w", name, err)
	}
	return nil
}

// inetSockets reports whether the network namespace of c's first process
// holds an internet socket (inet) of any kind, and a TCP one (tcp), in any state:
// the kernel lists them in the namespace's /proc/net files, a line each
// after a heading.
func inetSockets(c *libcontainer.Container) (inet, tcp bool, err error) {
	st, err := c.State()
	if err != nil {
		return false, false, fmt.Errorf("look for internet sockets: %w", err)
	}
	for _, name := range []string{"tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", st.InitProcessPid, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // not in this kernel
		}
		if err != nil {
			return false, false, fmt.Errorf("look for internet sockets: %w", err)
		}
		if bytes.Count(b, []byte{'\n'}) > 1 {
			inet = true
			tcp = tcp || name == "tcp" || name == "tcp6"
		}
	}
	return inet, tcp, nil
}

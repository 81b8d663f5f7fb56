package peercred

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// Listen listens on the Unix socket at path and sets its permission bits to
// mode (e.g. 0666 for a socket any local user may use; each caller is still
// identified by uid). A socket file left behind by a process that died is
// removed first; Listen refuses to remove a socket that still accepts
// connections or a file that is not a socket.
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes path if it is a socket nobody is listening on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s is in use by another process", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("probe existing socket: %w", err)
	}
	return os.Remove(path)
}

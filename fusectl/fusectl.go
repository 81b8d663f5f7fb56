// Package fusectl aborts FUSE connections through the kernel's fusectl
// file system: the one way to free a FUSE mount whose server will never
// answer, and the processes waiting on it.
package fusectl

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotMounted says no FUSE file system is mounted at the path Abort was
// given.
var ErrNotMounted = errors.New("no FUSE file system mounted there")

// dir is where the kernel lists FUSE connections.
const dir = "/sys/fs/fuse/connections"

// Abort aborts the connection of the FUSE file system mounted at
// mountpoint: every pending and future request fails with ECONNABORTED,
// and a thread waiting for an answer its server will never give (a
// server killed while it held a request) is let go. It finds the
// connection in /proc/self/mountinfo, as stat(2) on a stuck mount would
// hang.
func Abort(mountpoint string) error {
	minor, err := mountMinor(mountpoint)
	if err != nil {
		return err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type != magic {
		if err := unix.Mount("fusectl", dir, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount fusectl: %w", err)
		}
	}
	conn := filepath.Join(dir, minor, "abort")
	if err := os.WriteFile(conn, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort %s: %w", mountpoint, err)
	}
	return nil
}

// mountMinor returns the minor device number of the FUSE file system
// mounted at mountpoint, the last one if several are stacked there.
func mountMinor(mountpoint string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	want := filepath.Clean(mountpoint)
	var minor string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype ...
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) < 5 || unescapeMount(fields[4]) != want {
			continue
		}
		_, fstype, _ := strings.Cut(line, " - ")
		if !strings.HasPrefix(fstype, "fuse") {
			continue
		}
		if _, m, ok := strings.Cut(fields[2], ":"); ok {
			minor = m
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	if minor == "" {
		return "", fmt.Errorf("%s: %w", mountpoint, ErrNotMounted)
	}
	return minor, nil
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// magic is fusectl's magic number of statfs(2).
const magic = 0x65735543

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/fusectl"
)

// freeFUSEMounts aborts and detaches the FUSE mounts a stopped pool left
// under dir (a starter killed in a test's last moments may have): the
// test's clean-up would otherwise wait on them for good.
func freeFUSEMounts(t testing.TB, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var left []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options - fstype ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasPrefix(fields[4], filepath.Clean(dir)+"/") {
			continue
		}
		if i := strings.Index(sc.Text(), " - fuse"); i > 0 {
			left = append(left, fields[4])
		}
	}
	for _, m := range left {
		t.Logf("a FUSE mount was left at %s: aborted", m)
		_ = fusectl.Abort(m)
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
}

package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// A hybrid machine's files, as on our CI machines.
const (
	hybridSelf = `9:name=systemd:/
8:pids:/
4:memory:/process_api/4c9e
2:cpuacct:/
1:cpu:/
0::/
`
	hybridMountinfo = `20 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 20 0:25 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd
31 20 0:26 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
32 20 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
33 20 0:28 / /sys/fs/cgroup/cpuacct rw,nosuid - cgroup cgroup rw,cpuacct
34 20 0:29 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
35 20 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw
36 20 0:31 / /mnt/with\040space rw - tmpfs tmpfs rw
`
)

func TestOwnCgroupDirs(t *testing.T) {
	got, err := ownCgroupDirs(strings.NewReader(hybridSelf), strings.NewReader(hybridMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory/process_api/4c9e",
		"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/unified",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Unified only: one tree.
	got, _ = ownCgroupDirs(strings.NewReader("0::/user.slice/x\n"),
		strings.NewReader("40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"))
	if !slices.Equal(got, []string{"/sys/fs/cgroup/user.slice/x"}) {
		t.Errorf("unified: %q", got)
	}
}

func FuzzOwnCgroupDirs(f *testing.F) {
	f.Add(hybridSelf, hybridMountinfo)
	f.Add("0::/a\n", "1 1 0:1 /a /c rw - cgroup2 c rw\n")
	f.Add("1:cpu,cpuacct:/../x\n", "1 1 0:1 / /c rw - cgroup c rw,cpu,cpuacct\n")
	f.Fuzz(func(t *testing.T, self, mountinfo string) {
		dirs, err := ownCgroupDirs(strings.NewReader(self), strings.NewReader(mountinfo))
		if err != nil {
			return
		}
		for _, d := range dirs {
			// Never a path outside the mount it belongs to.
			if strings.Contains(d, "..") {
				t.Errorf("dir %q escapes its mount", d)
			}
		}
	})
}

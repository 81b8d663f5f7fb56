package sandbox

import (
	"golang.org/x/sys/unix"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
)

func TestContainerConfig(t *testing.T) {
	cfg := containerConfig(spec{
		id: "slot1-1.0", hostname: "slot1-1.0", cgroupParent: "harrier/x/slot1",
		user: identity{name: "nobody", uid: 65534, gid: 65534}, rootfs: "/state/rootfs",
		hostDirs: []string{"/etc", "/usr"}, writable: []string{"/exec/scratch.1"},
		memoryBytes: 64 << 20, cpuShares: 2048, pidsLimit: 100,
	})
	if !cfg.Readonlyfs || !cfg.NoNewPrivileges || cfg.Rootfs != "/state/rootfs" {
		t.Errorf("root file system or privileges: %+v", cfg)
	}
	if c := cfg.Capabilities; len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Ambient)+len(c.Inheritable) != 0 {
		t.Errorf("a non-root job has capabilities %+v", c)
	}
	for _, ns := range []configs.NamespaceType{configs.NEWNS, configs.NEWPID, configs.NEWIPC, configs.NEWUTS, configs.NEWNET} {
		if !cfg.Namespaces.Contains(ns) {
			t.Errorf("no %s namespace", ns)
		}
	}
	r := cfg.Cgroups.Resources
	if r.Memory != 64<<20 || r.CpuShares != 2048 || *r.PidsLimit != 100 || r.CpuQuota != 0 {
		t.Errorf("limits %+v", r)
	}
	mounts := map[string]*configs.Mount{}
	for _, m := range cfg.Mounts {
		mounts[m.Destination] = m
	}
	for _, d := range []string{"/proc", "/dev", "/sys", "/tmp", "/etc", "/usr", "/exec/scratch.1"} {
		if mounts[d] == nil {
			t.Errorf("no mount at %s", d)
		}
	}
	if m := mounts["/usr"]; m == nil || m.Flags&unix.MS_RDONLY == 0 || m.Flags&unix.MS_REC != 0 {
		t.Errorf("/usr is not bound read-only and alone (without the mounts below it): %+v", m)
	}
	if m := mounts["/exec/scratch.1"]; m == nil || m.Flags&0x1 != 0 {
		t.Errorf("scratch is not writable: %+v", m)
	}
	if !slices.Contains(cfg.MaskPaths, "/proc/kcore") || !slices.Contains(cfg.ReadonlyPaths, "/proc/sys") {
		t.Error("/proc not masked")
	}
	if root := containerConfig(spec{user: identity{uid: 0}}); len(root.Capabilities.Bounding) == 0 {
		t.Error("an allowed root job gets no capabilities at all")
	}
}

func TestCleanDirsAndContainerID(t *testing.T) {
	if got := cleanDirs("/a/b/", "/a", "", "/c", "/a/b"); !slices.Equal(got, []string{"/a", "/c"}) {
		t.Errorf("cleanDirs = %q", got)
	}
	if got := containerID("slot2", "12.3"); got != "slot2-12.3" {
		t.Errorf("containerID = %q", got)
	}
	if got := containerID("slot1", "a/../b c"); got != "slot1-a_.._b_c" {
		t.Errorf("containerID = %q", got)
	}
}

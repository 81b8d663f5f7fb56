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
		hostDirs: []string{"/etc", "/usr"}, scratch: "/exec/scratch.1", dir: "/home/u/run", dirSource: "/exec/iofs.1",
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
	if r.Memory != 64<<20 || r.CpuShares != 2048 || *r.PidsLimit != 100 || r.CpuQuota != 0 || r.CpuPeriod != 0 {
		t.Errorf("limits %+v", r)
	}
	if r := containerConfig(spec{cpuQuota: 2 * cpuPeriod}).Cgroups.Resources; r.CpuQuota != 2*cpuPeriod || r.CpuPeriod != cpuPeriod {
		t.Errorf("a quota of two CPUs: quota %d, period %d", r.CpuQuota, r.CpuPeriod)
	}
	mounts := map[string]*configs.Mount{}
	for _, m := range cfg.Mounts {
		mounts[m.Destination] = m
	}
	for _, d := range []string{"/proc", "/dev", "/sys", "/tmp", "/etc", "/usr", JobScratchDir, "/home/u/run"} {
		if mounts[d] == nil {
			t.Errorf("no mount at %s", d)
		}
	}
	if m := mounts["/usr"]; m == nil || m.Flags&unix.MS_RDONLY == 0 || m.Flags&unix.MS_REC != 0 {
		t.Errorf("/usr is not bound read-only and alone (without the mounts below it): %+v", m)
	}
	if m := mounts[JobScratchDir]; m == nil || m.Source != "/exec/scratch.1" || m.Flags&unix.MS_RDONLY != 0 {
		t.Errorf("scratch is not bound writable at %s: %+v", JobScratchDir, m)
	}
	if m := mounts["/home/u/run"]; m == nil || m.Source != "/exec/iofs.1" || m.Flags&unix.MS_RDONLY != 0 {
		t.Errorf("the working directory is not bound writable from its source: %+v", m)
	}
	if !slices.Contains(cfg.MaskPaths, "/proc/kcore") || !slices.Contains(cfg.ReadonlyPaths, "/proc/sys") {
		t.Error("/proc not masked")
	}
	if root := containerConfig(spec{user: identity{uid: 0}}); len(root.Capabilities.Bounding) == 0 {
		t.Error("an allowed root job gets no capabilities at all")
	}
}

// TestJobPaths places a job's directories in its container where they
// are on every machine: the scratch directory and what is in it at
// JobScratchDir, a working directory bound from elsewhere (iofs) at its
// own path.
func TestJobPaths(t *testing.T) {
	cases := []struct {
		task              Task
		dir, source, path string
	}{
		{Task{Path: "/x/slot1.4/job.sh", Dir: "/x/slot1.4", ScratchDir: "/x/slot1.4/"}, JobScratchDir, "", JobScratchDir + "/job.sh"},
		{Task{Path: "/bin/sh", Dir: "/x/slot1.4/sub", ScratchDir: "/x/slot1.4"}, JobScratchDir + "/sub", "", "/bin/sh"},
		{Task{Path: "/x/slot1.40/a", Dir: "/home/u/run", DirSource: "/x/slot1.4/iofs", ScratchDir: "/x/slot1.4"}, "/home/u/run", "/x/slot1.4/iofs", "/x/slot1.40/a"},
		{Task{Path: "/bin/sh", Dir: "/data/run"}, "/data/run", "/data/run", "/bin/sh"},
	}
	for _, c := range cases {
		dir, source := jobDir(&c.task)
		path, _ := inContainer(&c.task, c.task.Path)
		if dir != c.dir || source != c.source || path != c.path {
			t.Errorf("%+v: dir %q from %q, program %q; want %q from %q, %q", c.task, dir, source, path, c.dir, c.source, c.path)
		}
	}
}

func TestContainerID(t *testing.T) {
	if got := containerID("slot2", "12.3"); got != "slot2-12.3" {
		t.Errorf("containerID = %q", got)
	}
	if got := containerID("slot1", "a/../b c"); got != "slot1-a_.._b_c" {
		t.Errorf("containerID = %q", got)
	}
}

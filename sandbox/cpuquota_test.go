package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
)

// TestCPUQuota shows a job's CPU limits in its cgroup: with the quota
// configured, request_cpus CPUs of each CFS period; without it, the
// kernel's defaults, which the sandbox does not write (see cpuPeriod).
func TestCPUQuota(t *testing.T) {
	for _, quota := range []bool{true, false} {
		r := testRunner(t, func(c *Config) { c.CPUQuota = quota })
		scratch := t.TempDir()
		s := startJob(t, r, &Task{ID: "3.0", Path: "/bin/sh", ScratchDir: scratch, Cpus: 2, Args: []string{"-c",
			`cat /proc/self/cgroup > cgroup.tmp && mv cgroup.tmp cgroup; while [ ! -e done ]; do sleep 0.05; done`}})
		waitFile(t, filepath.Join(scratch, "cgroup"))
		quotaText, periodText := jobCPULimits(t, filepath.Join(scratch, "cgroup"))
		os.WriteFile(filepath.Join(scratch, "done"), nil, 0o644)
		if res := s.wait(t); res.exit.Code != 0 {
			t.Fatalf("exit %+v stderr %q", res.exit, res.stderr)
		}
		wantQuota := "-1"
		if quota {
			wantQuota = "200000"
		}
		if cgroups.IsCgroup2UnifiedMode() && !quota {
			wantQuota = "max"
		}
		if quotaText != wantQuota || periodText != "100000" {
			t.Errorf("quota configured %v: the job's cgroup has quota %q, period %q; want %q, 100000", quota, quotaText, periodText, wantQuota)
		}
	}
}

// jobCPULimits reads the CFS quota and period of the cgroup the job
// wrote its /proc/self/cgroup of into path.
func jobCPULimits(t *testing.T, path string) (quota, period string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := cgroups.ParseCgroupFile(path)
	if err != nil {
		t.Fatalf("parse %q: %v", b, err)
	}
	read := func(dir, file string) string {
		v, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(v))
	}
	if cgroups.IsCgroup2UnifiedMode() {
		f := strings.Fields(read(filepath.Join("/sys/fs/cgroup", paths[""]), "cpu.max"))
		if len(f) != 2 {
			t.Fatalf("cpu.max %q", f)
		}
		return f[0], f[1]
	}
	mnt, err := cgroups.FindCgroupMountpoint("", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, paths["cpu"])
	return read(dir, "cpu.cfs_quota_us"), read(dir, "cpu.cfs_period_us")
}

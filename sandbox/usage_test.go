package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupUsage reads the figures of a job's cgroup as cgroup v1 and
// v2 lay them out.
func TestCgroupUsage(t *testing.T) {
	write := func(dir string, files map[string]string) string {
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cpuacct := write(t.TempDir(), map[string]string{"cpuacct.stat": "user 250\nsystem 50\n"})
	memory := write(t.TempDir(), map[string]string{"memory.usage_in_bytes": "4096\n", "memory.max_usage_in_bytes": "8192\n"})
	unified := write(t.TempDir(), map[string]string{
		"cpu.stat":       "usage_usec 3500000\nuser_usec 2500000\nsystem_usec 1000000\nnr_periods 0\n",
		"memory.current": "1024\n", "memory.peak": "2048\n",
	})
	for _, c := range []struct {
		name  string
		paths map[string]string
		want  Usage
	}{
		{"v1", map[string]string{"cpuacct": cpuacct, "memory": memory, "cpu": cpuacct}, Usage{UserCPU: 2.5, SysCPU: 0.5, MemoryBytes: 4096, MaxRSSBytes: 8192}},
		{"v2", map[string]string{"": unified}, Usage{UserCPU: 2.5, SysCPU: 1, MemoryBytes: 1024, MaxRSSBytes: 2048}},
	} {
		got, err := cgroupUsage(c.paths)
		if err != nil || got != c.want {
			t.Errorf("%s: cgroupUsage = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := cgroupUsage(map[string]string{"": t.TempDir()}); err == nil {
		t.Error("cgroupUsage of a cgroup without its files: no error")
	}
}

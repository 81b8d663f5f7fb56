package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is the unit of cgroup v1's cpuacct.stat: USER_HZ, which is
// 100 on every Linux architecture Harrier runs on.
const clockTicks = 100

// cgroupUsage reads a job's CPU time and memory from the files of its
// cgroup, paths as libcontainer names them (controller: directory; ""
// for cgroup v2). libcontainer's Stats would read every controller's
// figures, block I/O's and huge pages' among them, at each job's end.
func cgroupUsage(paths map[string]string) (Usage, error) {
	if _, v1 := paths["cpuacct"]; !v1 {
		dir := paths[""] // unified
		var u Usage
		stat, err := readKeyed(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return Usage{}, err
		}
		u.UserCPU = float64(stat["user_usec"]) / 1e6
		u.SysCPU = float64(stat["system_usec"]) / 1e6
		if u.MemoryBytes, err = readInt(filepath.Join(dir, "memory.current")); err != nil {
			return Usage{}, err
		}
		// memory.peak came with Linux 5.19.
		u.MaxRSSBytes, _ = readInt(filepath.Join(dir, "memory.peak"))
		return u, nil
	}
	var u Usage
	stat, err := readKeyed(filepath.Join(paths["cpuacct"], "cpuacct.stat"))
	if err != nil {
		return Usage{}, err
	}
	u.UserCPU = float64(stat["user"]) / clockTicks
	u.SysCPU = float64(stat["system"]) / clockTicks
	mem := paths["memory"]
	if u.MemoryBytes, err = readInt(filepath.Join(mem, "memory.usage_in_bytes")); err != nil {
		return Usage{}, err
	}
	if u.MaxRSSBytes, err = readInt(filepath.Join(mem, "memory.max_usage_in_bytes")); err != nil {
		return Usage{}, err
	}
	return u, nil
}

// readInt reads a cgroup file holding one number.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads a cgroup file of "key value" lines.
func readKeyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			m[k] = n
		}
	}
	return m, nil
}

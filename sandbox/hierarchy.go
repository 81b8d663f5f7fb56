package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// hierarchies returns, for every cgroup hierarchy this process belongs to
// (each v1 controller mount, a named one such as name=systemd, and the v2
// tree), the directory of this process's own cgroup in it.
func hierarchies() ([]string, error) {
	self, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer self.Close()
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer mi.Close()
	return ownCgroupDirs(self, mi)
}

// cgroupMount is one cgroup file system mount.
type cgroupMount struct {
	point, root string
	v2          bool
	options     map[string]bool // super options: controllers and name=X
}

// ownCgroupDirs reads /proc/self/cgroup and /proc/self/mountinfo.
func ownCgroupDirs(self, mountinfo io.Reader) ([]string, error) {
	var mounts []cgroupMount
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		m := cgroupMount{point: unescape(f[4]), root: unescape(f[3]), v2: g[0] == "cgroup2", options: map[string]bool{}}
		for _, o := range strings.Split(g[2], ",") {
			m.options[o] = true
		}
		mounts = append(mounts, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var dirs []string
	sc = bufio.NewScanner(self)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, path := parts[1], parts[2]
		for _, m := range mounts {
			if (ctrls == "") != m.v2 || (!m.v2 && !m.options[strings.Split(ctrls, ",")[0]]) {
				continue
			}
			rel, err := filepath.Rel(m.root, path)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			dirs = append(dirs, filepath.Join(m.point, rel))
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	return dirs, nil
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

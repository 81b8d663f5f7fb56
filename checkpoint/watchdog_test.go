package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:         "/mnt/plain",
		`/mnt/with\040space`: "/mnt/with space",
		`/mnt/tab\011x`:      "/mnt/tab\tx",
		`/mnt/back\134slash`: `/mnt/back\slash`,
		`/mnt/short\04`:      `/mnt/short\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProcStat(t *testing.T) {
	comm, ppid, ok := procStat(os.Getpid())
	if !ok || ppid != os.Getppid() || comm == "" {
		t.Errorf("procStat(self) = %q %d %v", comm, ppid, ok)
	}
	if _, _, ok := procStat(-1); ok {
		t.Error("procStat of no process succeeded")
	}
}

func TestMountMinor(t *testing.T) {
	if _, err := mountMinor("/proc"); err != nil {
		t.Errorf("mountMinor(/proc): %v", err)
	}
	if _, err := mountMinor(t.TempDir()); err == nil {
		t.Error("a plain directory has a mount's device")
	}
}

// TestThawGoneCgroup: a vacated job's container may be removed before
// Dump thaws its cgroup; that is not an error, but a cgroup that is there
// and cannot be written is.
func TestThawGoneCgroup(t *testing.T) {
	dir := t.TempDir()
	if err := thaw(filepath.Join(dir, "gone", "freezer.state")); err != nil {
		t.Errorf("thaw a removed cgroup: %v", err)
	}
	if err := thaw(dir); err == nil {
		t.Error("thaw a directory: no error")
	}
}

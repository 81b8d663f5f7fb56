package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProcStat(t *testing.T) {
	comm, ppid, ok := procStat(os.Getpid())
	if !ok || ppid != os.Getppid() || comm == "" {
		t.Errorf("procStat(self) = %q %d %v", comm, ppid, ok)
	}
	if _, _, ok := procStat(-1); ok {
		t.Error("procStat of no process succeeded")
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

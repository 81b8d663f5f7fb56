package starter

import "testing"

// TestJobDirMountpoint names one mount point for all the jobs of a slot,
// in the directory of mount points beside their scratch directories,
// under the prefix by which the startd cleans up a slot's mounts
// ("scratch.SLOT.").
func TestJobDirMountpoint(t *testing.T) {
	for scratch, want := range map[string]string{
		"/x/execute/scratch.slot1.1234":    "/x/execute/iofs/scratch.slot1.dir",
		"/x/execute/scratch.slot1.99":      "/x/execute/iofs/scratch.slot1.dir",
		"/x/execute/scratch.slot1_2.56789": "/x/execute/iofs/scratch.slot1_2.dir",
		"/x/execute/job":                   "/x/execute/iofs/job",
	} {
		if got := jobDirMountpoint(scratch); got != want {
			t.Errorf("jobDirMountpoint(%q) = %q, want %q", scratch, got, want)
		}
	}
}

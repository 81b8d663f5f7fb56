package iofs_test

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/iofs"
)

// TestOwnerFilesShowAsTheJobs: a job that runs as another user than its
// owner (a slot user) sees its owner's files as its own, as git (whose
// safe.directory check refuses a repository another user owns), ssh and
// test -O want; files of anyone else keep their ids; and a change of
// owner to the job's user is one to the owner's on the submit side.
// Here the shadow runs as root, so root's files are the owner's.
func TestOwnerFilesShowAsTheJobs(t *testing.T) {
	const jobUID, jobGID, other = 65534, 65533, 4242
	e := newEnvWith(t, "", iofs.Options{HTTPClient: http.DefaultClient, JobUID: jobUID, JobGID: jobGID,
		Owner: &iofs.IDs{UID: 0, GID: 0}})
	for d := e.mnt; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil && d != e.mnt {
			t.Fatal(err)
		}
	}
	files := map[string][2]int{"mine": {0, 0}, "theirs": {other, other}, "shared": {0, other}}
	for name, ids := range files {
		p := filepath.Join(e.submit, name)
		if err := os.WriteFile(p, []byte(name), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, ids[0], ids[1]); err != nil {
			t.Fatal(err)
		}
	}
	as := func(fn func() error) error {
		return asuser.Do(asuser.Credential{UID: jobUID, GID: jobGID, Groups: []uint32{}}, fn)
	}
	owner := func(p string) (uint32, uint32) {
		t.Helper()
		var st syscall.Stat_t
		if err := as(func() error { return syscall.Stat(p, &st) }); err != nil {
			t.Fatal(err)
		}
		return st.Uid, st.Gid
	}
	for name, want := range map[string][2]uint32{"mine": {jobUID, jobGID}, "theirs": {other, other}, "shared": {jobUID, other}, ".": {jobUID, jobGID}} {
		if u, g := owner(filepath.Join(e.mnt, name)); u != want[0] || g != want[1] {
			t.Errorf("the job sees %s owned by %d:%d, want %d:%d", name, u, g, want[0], want[1])
		}
	}
	made := filepath.Join(e.mnt, "made")
	if err := as(func() error { return os.WriteFile(made, []byte("x"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	if u, g := owner(made); u != jobUID || g != jobGID {
		t.Errorf("the job sees the file it made owned by %d:%d", u, g)
	}

	// Giving its own file to itself, as cp -p and tar do, is giving it to
	// the owner: nothing changes on the submit side.
	if err := as(func() error { return os.Chown(filepath.Join(e.mnt, "mine"), jobUID, jobGID) }); err != nil {
		t.Fatalf("the job's chown of its own file to itself: %v", err)
	}
	st, err := os.Stat(filepath.Join(e.submit, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Sys().(*syscall.Stat_t); s.Uid != 0 || s.Gid != 0 {
		t.Errorf("after the job's chown to itself the submit side has %d:%d, want the owner's 0:0", s.Uid, s.Gid)
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"harrier.dev/harrier/sandbox"
)

// TestContainerJobsOfAClaimSeeTheirOwnDirectory runs the jobs of one
// claim in containers, each in its own submit-side directory through
// iofs, one after the other on one slot, whose iofs mount point they
// use in turn: each job sees its own directory and nothing of the
// others', and no mount is left behind.
func TestContainerJobsOfAClaimSeeTheirOwnDirectory(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	p := startPoolWith(t, 1, "SANDBOX = container\nNUM_SLOTS = 1")
	dir := t.TempDir()
	const jobs = 3
	for i := 0; i < jobs; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%d", i))
		writeFile(t, filepath.Join(d, fmt.Sprintf("marker%d", i)), "", 0o644)
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	c := p.submit(t, dir, "dirs.sub", `executable = /bin/sh
arguments = "-c 'ls -A; echo left > left'"
initialdir = d$(Process)
output = listing
should_transfer_files = NO
queue `+fmt.Sprint(jobs)+"\n")
	p.waitCluster(t, c, jobs)
	for i := 0; i < jobs; i++ {
		listing := strings.Fields(mustRead(t, filepath.Join(dir, fmt.Sprintf("d%d", i), "listing")))
		for j := 0; j < jobs; j++ {
			if sees := strings.Contains(strings.Join(listing, " "), fmt.Sprintf("marker%d", j)); sees != (i == j) {
				t.Errorf("job %d sees %v in its directory", i, listing)
			}
		}
		if strings.Contains(strings.Join(listing, " "), "left") {
			t.Errorf("job %d sees a file it had not written yet: %v", i, listing)
		}
	}
	matches := p.historyMatches(t)
	// As in TestClaimReuseRunsJobsWithoutNewMatches: a lease or timing
	// hiccup may cost one more match, never one a job.
	if matches < 1 || matches >= jobs {
		t.Errorf("%d jobs on one slot took %d matches: they did not share a claim", jobs, matches)
	}
	mounts := mustRead(t, "/proc/self/mountinfo")
	for _, l := range strings.Split(mounts, "\n") {
		if strings.Contains(l, filepath.Join(p.dir, "execute")) && strings.Contains(l, "/iofs/") {
			t.Errorf("a job's directory is still mounted: %s", l)
		}
	}
}

// TestJobWriteClearsSetuid: a job that writes to or truncates a
// set-user-ID file of its owner's, through iofs, clears the set-ID bits
// on the submit side, as its owner's write there would; the job sees the
// file as it is.
func TestJobWriteClearsSetuid(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	// The owner's shadow runs the harrier binary: one the owner may run.
	p := startPoolFrom(t, publicBinary(t), 1, "SANDBOX = container\nNUM_SLOTS = 1")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "suid")
	writeFile(t, filepath.Join(dir, "prog"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, "cut"), "#!/bin/sh\n", 0o755)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	chownAll(t, dir, uid, gid)
	for _, f := range []string{"prog", "cut"} {
		if err := syscall.Chmod(filepath.Join(dir, f), 0o6777); err != nil {
			t.Fatal(err)
		}
	}
	c := p.submitAs(t, owner.Username, dir, "suid.sub", `executable = /bin/sh
arguments = "-c 'stat -c %a prog > before; echo x >> prog; stat -c %a prog > after; truncate -s 1 cut; stat -c %a cut > cut.after'"
should_transfer_files = NO
queue
`)
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", c)); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	for _, f := range []string{"prog", "cut"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("after the job wrote %s it is %v on the submit side, want set-ID bits cleared", f, st.Mode())
		}
	}
	if b, a := strings.TrimSpace(mustRead(t, filepath.Join(dir, "before"))), strings.TrimSpace(mustRead(t, filepath.Join(dir, "after"))); b != "6777" || a != "777" {
		t.Errorf("the job saw mode %s before its write and %s after, want 6777 and 777", b, a)
	}
	if a := strings.TrimSpace(mustRead(t, filepath.Join(dir, "cut.after"))); a != "777" {
		t.Errorf("the job saw mode %s after its truncate, want 777", a)
	}
}

// TestJobOwnsItsFiles: a container job runs as the slot's user, not as
// its owner, yet sees its owner's files in its directory as its own,
// as it would on its owner's disk: git works in a repository there
// (git refuses one owned by another user), test -O holds, giving its
// own file to itself succeeds; another user's file keeps its owner.
func TestJobOwnsItsFiles(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	p := startPoolFrom(t, publicBinary(t), 1, "SANDBOX = container\nNUM_SLOTS = 1")
	alice, bob := newUser(t), newUser(t)
	au, ag := lookupIDs(t, alice.Username)
	bu, _ := lookupIDs(t, bob.Username)
	dir := filepath.Join(alice.HomeDir, "own")
	writeFile(t, filepath.Join(dir, "mine"), "alice's\n", 0o644)
	writeFile(t, filepath.Join(dir, "theirs"), "bob's\n", 0o644)
	writeFile(t, filepath.Join(dir, "job.sh"), `set -e
exec > seen 2>&1
echo "job $(id -u) mine $(stat -c %u:%g mine) theirs $(stat -c %u theirs)"
test -O mine && echo "owns mine"
chown "$(id -u):$(id -g)" mine && echo "gave mine to itself"
git init -q repo
cd repo
echo 1 > f
git add f
git -c user.name=a -c user.email=a@example.org commit -qm one
git fsck --strict && echo "git $(git rev-list --count HEAD)"
`, 0o644)
	chownAll(t, dir, au, ag)
	if err := os.Chown(filepath.Join(dir, "theirs"), int(bu), int(ag)); err != nil {
		t.Fatal(err)
	}
	c := p.submitAs(t, alice.Username, dir, "own.sub", `executable = /bin/sh
arguments = job.sh
should_transfer_files = NO
queue
`)
	if out, code := p.harrier(t, "wait", "--timeout", "60", fmt.Sprintf("%d.0", c)); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	seen := mustRead(t, filepath.Join(dir, "seen"))
	var job int
	var mine, theirs string
	if _, err := fmt.Sscanf(seen, "job %d mine %s theirs %s", &job, &mine, &theirs); err != nil {
		t.Fatalf("the job wrote %q: %v", seen, err)
	}
	if uint32(job) == au {
		t.Fatalf("the job ran as its owner (%d): the test needs a slot user", job)
	}
	if !strings.HasPrefix(mine, fmt.Sprintf("%d:", job)) || theirs != fmt.Sprint(bu) {
		t.Errorf("the job (%d) saw its owner's file owned by %s and bob's (%d) by %s", job, mine, bu, theirs)
	}
	for _, want := range []string{"owns mine", "gave mine to itself", "git 1"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the job's output lacks %q:\n%s", want, seen)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "mine"), &st); err != nil || st.Uid != au {
		t.Errorf("on the submit side mine is %d's (%v), want alice's %d", st.Uid, err, au)
	}
}

package jobqueue

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/classad"
)

// smallDisk mounts a tmpfs of the given size ("2m") on a new temporary
// directory, unmounted when the test ends.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root: mounts a small tmpfs to fill (not in -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs to fill (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a file into dir until its file system is full, and returns
// a function that removes it again.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return func() {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// bulky returns job c.p's ad with an attribute large enough that no
// commit holding it fits in the slack of a file's last page.
func bulky(c, p int) *classad.ClassAd {
	ad := jobAd(c, p)
	ad.SetString("Blob", strings.Repeat("x", 32<<10))
	return ad
}

// historyOf returns the ids in the history, in order.
func historyOf(t *testing.T, l *Log) []JobID {
	t.Helper()
	var ids []JobID
	if err := l.History(func(ad *classad.ClassAd) bool {
		ids = append(ids, jobIDOf(ad))
		return true
	}); err != nil {
		t.Fatalf("History: %v", err)
	}
	return ids
}

func countID(ids []JobID, id JobID) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// TestFullDiskCommitsFailCleanly fills the store's file system until
// commits fail: a failed commit, a retirement among them, applies nothing
// (memory and disk agree, before and after a restart), and once space is
// freed the next commits succeed without a restart.
func TestFullDiskCommitsFailCleanly(t *testing.T) {
	disk := smallDisk(t, "4m")
	dir := filepath.Join(disk, "queue")
	ctx := context.Background()
	l := openT(t, dir, Options{CompactRatio: -1})
	defer func() { l.Close() }()
	var txn Txn
	for p := range 4 {
		txn.NewJob(JobID{1, p}, jobAd(1, p))
	}
	commitT(t, l, &txn)
	free := fill(t, disk)

	txn = Txn{}
	txn.NewJob(JobID{2, 0}, bulky(2, 0))
	if err := l.Commit(ctx, &txn); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit on a full disk = %v, want ENOSPC", err)
	}
	if _, ok := l.Get(JobID{2, 0}); ok {
		t.Error("the job of a failed commit is in the queue")
	}
	retire := func() error {
		ad, ok := l.Get(JobID{1, 0})
		if !ok {
			t.Fatal("1.0 is not in the queue")
		}
		ad.SetInt("JobStatus", 3)
		ad.SetString("Blob", strings.Repeat("y", 32<<10))
		var txn Txn
		txn.Retire(JobID{1, 0}, ad)
		return l.Commit(ctx, &txn)
	}
	if err := retire(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("retirement on a full disk = %v, want ENOSPC", err)
	}
	checkFailed := func(l *Log) {
		t.Helper()
		if _, ok := l.Get(JobID{1, 0}); !ok {
			t.Error("a job whose retirement failed left the queue")
		}
		if n := countID(historyOf(t, l), JobID{1, 0}); n != 0 {
			t.Errorf("a job whose retirement failed is %d times in the history", n)
		}
		if l.Len() != 4 {
			t.Errorf("Len = %d, want the 4 jobs committed before the disk filled", l.Len())
		}
	}
	checkFailed(l)
	want := dump(l)

	// A restart while the disk is still full finds what memory had.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, Options{CompactRatio: -1})
	checkFailed(l)
	if got := dump(l); got != want {
		t.Errorf("after a restart on the full disk:\n%s\nwant:\n%s", got, want)
	}

	// Space returns: the same store commits again, no restart needed.
	free()
	txn = Txn{}
	txn.NewJob(JobID{2, 0}, bulky(2, 0))
	commitT(t, l, &txn)
	if err := retire(); err != nil {
		t.Fatalf("retirement once space returned: %v", err)
	}
	if _, ok := l.Get(JobID{1, 0}); ok {
		t.Error("retired job still in the queue")
	}
	if n := countID(historyOf(t, l), JobID{1, 0}); n != 1 {
		t.Errorf("retired job is %d times in the history, want 1", n)
	}
	want = dump(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, Options{CompactRatio: -1})
	if got := dump(l); got != want {
		t.Errorf("reopened:\n%s\nwant:\n%s", got, want)
	}
	if n := countID(historyOf(t, l), JobID{1, 0}); n != 1 {
		t.Errorf("after reopening, the retired job is %d times in the history, want 1", n)
	}
}

// TestFullDiskAgainAndAgain fails commits on a full disk many times in a
// row, with space freed and taken between them: every acknowledged commit
// survives a reopen, and nothing of a failed one appears.
func TestFullDiskAgainAndAgain(t *testing.T) {
	disk := smallDisk(t, "2m")
	dir := filepath.Join(disk, "queue")
	ctx := context.Background()
	l := openT(t, dir, Options{CompactRatio: -1})
	defer func() { l.Close() }()
	acked := map[JobID]bool{}
	failed := 0
	for round := range 6 {
		free := fill(t, disk)
		for p := range 3 {
			id := JobID{round + 1, p}
			var txn Txn
			txn.NewJob(id, bulky(id.Cluster, id.Proc))
			switch err := l.Commit(ctx, &txn); {
			case err == nil:
				acked[id] = true
			case errors.Is(err, syscall.ENOSPC):
				failed++
			default:
				t.Fatalf("Commit on a full disk: %v", err)
			}
		}
		free()
		id := JobID{round + 1, 9}
		var txn Txn
		txn.NewJob(id, bulky(id.Cluster, id.Proc))
		commitT(t, l, &txn)
		acked[id] = true
	}
	if failed == 0 {
		t.Fatal("no commit failed on the full disk")
	}
	check := func(l *Log) {
		t.Helper()
		n := 0
		l.Scan(func(id JobID, _ *classad.ClassAd) bool {
			if !acked[id] {
				t.Errorf("%s is in the queue, but its commit failed", id)
			}
			n++
			return true
		})
		if n != len(acked) {
			t.Errorf("%d jobs in the queue, %d acknowledged", n, len(acked))
		}
	}
	check(l)
	l.Close()
	l = openT(t, dir, Options{CompactRatio: -1})
	check(l)
}

// TestHistoryWriteFails puts the history file on a second small file
// system and fills that one only: a retirement still commits (the log
// holds it), History shows it, compaction waits for it, a restart keeps
// it, and once the history's disk has room the record is written there.
func TestHistoryWriteFails(t *testing.T) {
	disk := smallDisk(t, "4m")
	hdisk := smallDisk(t, "1m")
	dir := filepath.Join(disk, "queue")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(hdisk, "history"), filepath.Join(dir, historyName)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := openT(t, dir, Options{CompactRatio: -1})
	defer func() { l.Close() }()
	var txn Txn
	for p := range 3 {
		txn.NewJob(JobID{1, p}, jobAd(1, p))
	}
	commitT(t, l, &txn)
	free := fill(t, hdisk)

	ad := bulky(1, 0)
	ad.SetInt("JobStatus", 4)
	txn = Txn{}
	txn.Retire(JobID{1, 0}, ad)
	commitT(t, l, &txn)
	check := func(l *Log, when string) {
		t.Helper()
		if _, ok := l.Get(JobID{1, 0}); ok {
			t.Errorf("%s: retired job still in the queue", when)
		}
		if n := countID(historyOf(t, l), JobID{1, 0}); n != 1 {
			t.Errorf("%s: retired job is %d times in the history, want 1", when, n)
		}
	}
	check(l, "history disk full")
	if err := l.Compact(ctx); err == nil {
		t.Error("compaction removed the only log holding an unwritten history record")
	}
	l.Close()
	l = openT(t, dir, Options{CompactRatio: -1})
	check(l, "reopened with the history disk full")

	free()
	txn = Txn{}
	txn.SetValue(JobID{1, 1}, "JobStatus", classad.Int(5))
	commitT(t, l, &txn)
	check(l, "history disk freed")
	if err := l.Compact(ctx); err != nil {
		t.Fatalf("Compact once the history is written: %v", err)
	}
	l.Close()
	l = openT(t, dir, Options{CompactRatio: -1})
	check(l, "reopened after compaction")
	if len(l.history.pending) != 0 {
		t.Errorf("%d history records still pending", len(l.history.pending))
	}
}

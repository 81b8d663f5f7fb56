package jobqueue

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// retireT retires jobs in one transaction, each with its queue ad as
// its final ad.
func retireT(t *testing.T, l *Log, ids ...JobID) {
	t.Helper()
	var txn Txn
	for _, id := range ids {
		ad, ok := l.Get(id)
		if !ok {
			t.Fatalf("%s not in the queue", id)
		}
		ad.SetInt("JobStatus", 4)
		txn.Retire(id, ad)
	}
	commitT(t, l, &txn)
}

func historySize(t *testing.T, dir string) int64 {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, historyName))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestRetireCrashBeforeHistory rebuilds the store as a crash would leave
// it between a retirement's log write and its history write, and with
// the history file removed: recovery appends each missing record once,
// in order, and numbers later records on.
func TestRetireCrashBeforeHistory(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{})
	var txn Txn
	for p := range 6 {
		txn.NewJob(JobID{1, p}, jobAd(1, p))
	}
	commitT(t, l, &txn)
	retireT(t, l, JobID{1, 0})
	size := historySize(t, dir)
	retireT(t, l, JobID{1, 1}, JobID{1, 2})
	l.Close()
	want := []JobID{{1, 0}, {1, 1}, {1, 2}}

	// The crash came before the second retirement reached the history.
	if err := os.Truncate(filepath.Join(dir, historyName), size); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, Options{})
	if got := historyOf(t, l); !slices.Equal(got, want) {
		t.Fatalf("history after the crash = %v, want %v", got, want)
	}
	if l.Len() != 3 {
		t.Errorf("Len = %d, want 3", l.Len())
	}
	retireT(t, l, JobID{1, 3})
	want = append(want, JobID{1, 3})
	l.Close()
	l = openT(t, dir, Options{})
	if got := historyOf(t, l); !slices.Equal(got, want) {
		t.Errorf("history reopened = %v, want %v", got, want)
	}
	l.Close()

	// A history file removed (say, by an administrator) is rebuilt from
	// the retirements the logs still hold.
	if err := os.Remove(filepath.Join(dir, historyName)); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, Options{})
	defer l.Close()
	if got := historyOf(t, l); !slices.Equal(got, want) {
		t.Errorf("history rebuilt from the logs = %v, want %v", got, want)
	}
	// After a compaction the logs no longer hold them: nothing is
	// appended twice.
	if err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	retireT(t, l, JobID{1, 4})
	want = append(want, JobID{1, 4})
	if got := historyOf(t, l); !slices.Equal(got, want) {
		t.Errorf("history after compaction = %v, want %v", got, want)
	}
}

// TestRetireOnOldHistory retires jobs into a history file written before
// records were numbered: its ads stay, and new ones follow them.
func TestRetireOnOldHistory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// What AppendHistory wrote: frames of ads, without numbers.
	var old []byte
	for p := range 2 {
		var enc encoder
		var start int
		enc.buf, start = beginFrame(old)
		enc.op(Op{kind: opHistoryAd, ad: jobAd(9, p)})
		must(finishFrame(enc.buf, start))
		old = enc.buf
	}
	if err := os.WriteFile(filepath.Join(dir, historyName), old, 0o600); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, Options{})
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	txn.NewJob(JobID{1, 1}, jobAd(1, 1))
	commitT(t, l, &txn)
	retireT(t, l, JobID{1, 0})
	size := historySize(t, dir)
	retireT(t, l, JobID{1, 1})
	l.Close()
	if err := os.Truncate(filepath.Join(dir, historyName), size); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, Options{})
	defer l.Close()
	want := []JobID{{9, 0}, {9, 1}, {1, 0}, {1, 1}}
	if got := historyOf(t, l); !slices.Equal(got, want) {
		t.Errorf("history = %v, want %v", got, want)
	}
}

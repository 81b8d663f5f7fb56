package jobqueue

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestJobID(t *testing.T) {
	for _, s := range []string{"12.3", "1.0", "2147483647.0"} {
		id, err := ParseJobID(s)
		if err != nil || id.String() != s {
			t.Errorf("ParseJobID(%q) = %v, %v", s, id, err)
		}
	}
	for _, s := range []string{"", "12", "12.", ".3", "-1.0", "1.+2", "a.b", "1.2.3", "99999999999.0"} {
		if id, err := ParseJobID(s); err == nil {
			t.Errorf("ParseJobID(%q) = %v, want error", s, id)
		}
	}
}

func TestSortByIDMatchesComparison(t *testing.T) {
	var all []scanEntry
	for p := -1; p < 500; p++ { // dense, with the factory
		if p%7 != 3 {
			all = append(all, scanEntry{id: JobID{Cluster: 4, Proc: p}})
		}
	}
	for p := range 40 { // sparse
		all = append(all, scanEntry{id: JobID{Cluster: 2, Proc: p * p * 13}})
	}
	all = append(all, scanEntry{id: JobID{Cluster: 9, Proc: 0}}, scanEntry{id: JobID{Cluster: 1, Proc: 3}})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	want := slices.Clone(all)
	slices.SortFunc(want, func(a, b scanEntry) int { return a.id.Compare(b.id) })
	sortByID(all)
	if !slices.Equal(all, want) {
		t.Errorf("sortByID differs from a sort by comparison:\n got %v\nwant %v", all, want)
	}
}

// TestHistoryTornAppendCut: an append to the history torn by a crash is
// cut off on open, and the records before it are kept.
func TestHistoryTornAppendCut(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{})
	var txn Txn
	for p := range 3 {
		txn.NewJob(JobID{7, p}, jobAd(7, p))
	}
	commitT(t, l, &txn)
	retireT(t, l, JobID{7, 0}, JobID{7, 1})
	l.Close()
	f, err := os.OpenFile(filepath.Join(dir, historyName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("HJQ\x01\x40\x00\x00\x00garbage"))
	f.Close()

	l = openT(t, dir, Options{})
	defer l.Close()
	retireT(t, l, JobID{7, 2})
	if got, want := historyOf(t, l), []JobID{{7, 0}, {7, 1}, {7, 2}}; !slices.Equal(got, want) {
		t.Errorf("history = %v, want %v", got, want)
	}
}

package jobqueue

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

// buildLog commits n single-job transactions and returns the queue dump
// after each one, and the log file's size after each one.
func buildLog(t *testing.T, dir string, n int) (dumps []string, sizes []int64) {
	t.Helper()
	l := openT(t, dir, Options{})
	for c := 1; c <= n; c++ {
		var txn Txn
		txn.NewJob(JobID{c, 0}, jobAd(c, 0))
		if c > 1 {
			txn.SetValue(JobID{c - 1, 0}, "JobStatus", classad.Int(2))
		}
		commitT(t, l, &txn)
		dumps = append(dumps, dump(l))
		st, err := os.Stat(filepath.Join(dir, logName(1)))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.Size())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dumps, sizes
}

func TestTornTailTruncated(t *testing.T) {
	src := t.TempDir()
	dumps, sizes := buildLog(t, src, 4)
	data, err := os.ReadFile(filepath.Join(src, logName(1)))
	if err != nil {
		t.Fatal(err)
	}
	start3, end3 := sizes[2], sizes[3] // the last transaction's frame
	cases := map[string][]byte{
		"cut in header":  data[:start3+5],
		"cut in payload": data[:end3-7],
		"flipped byte":   flip(data, end3-3),
		"zeros appended": append(slices.Clip(data[:end3]), make([]byte, 4096)...),
		"garbage":        append(slices.Clip(data[:end3]), "HJQ\x01\xff\xff\x00\x00not a frame at all"...),
		"huge length":    append(slices.Clip(data[:end3]), "HJQ\x01\xff\xff\xff\x3f1234"...),
	}
	for name, torn := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, logName(1))
			if err := os.WriteFile(path, torn, 0o600); err != nil {
				t.Fatal(err)
			}
			l := openT(t, dir, Options{})
			want := dumps[3]
			if int64(len(torn)) < end3 || name == "flipped byte" {
				want = dumps[2]
			}
			if got := dump(l); got != want {
				t.Errorf("recovered:\n%s\nwant:\n%s", got, want)
			}
			// The store works on after the cut: a new commit survives.
			var txn Txn
			txn.NewJob(JobID{99, 0}, jobAd(99, 0))
			commitT(t, l, &txn)
			want = dump(l)
			l.Close()
			l = openT(t, dir, Options{})
			defer l.Close()
			if got := dump(l); got != want {
				t.Errorf("after commit and reopen:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func flip(b []byte, at int64) []byte {
	c := slices.Clone(b)
	c[at] ^= 0x20
	return c
}

func TestCorruptionInTheMiddleIsAnError(t *testing.T) {
	src := t.TempDir()
	_, sizes := buildLog(t, src, 4)
	data, err := os.ReadFile(filepath.Join(src, logName(1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{sizes[0] + 2, sizes[0] + 6, sizes[1] - 1, sizes[1] + 20} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, logName(1)), flip(data, at), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{})
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("damage at %d: Open = %v, want a CorruptError", at, err)
		}
		// Nothing was cut off: the damaged file is left for inspection.
		if st, _ := os.Stat(filepath.Join(dir, logName(1))); st.Size() != int64(len(data)) {
			t.Errorf("damage at %d: log changed size to %d", at, st.Size())
		}
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openT(t, dir, Options{NoSync: true, CompactMinBytes: 64 << 10, CompactRatio: 2})
	var txn Txn
	for p := range 200 {
		txn.NewJob(JobID{1, p}, jobAd(1, p))
	}
	commitT(t, l, &txn)
	// Many edits grow the log well past twice the queue.
	for i := range 3000 {
		var txn Txn
		txn.SetValue(JobID{1, i % 200}, "NumJobStarts", classad.Int(int64(i)))
		if i%100 == 99 {
			txn.Destroy(JobID{1, i % 200})
		}
		if i%100 == 0 {
			txn.NewJob(JobID{2, i}, jobAd(2, i))
		}
		if err := l.Commit(ctx, &txn); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	if err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	want := dump(l)
	l.Close()
	names := dirNames(t, dir)
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, snapshotPrefix) }) {
		t.Fatalf("no snapshot written: %v", names)
	}
	nlogs := 0
	for _, n := range names {
		if strings.HasPrefix(n, logPrefix) {
			nlogs++
		}
	}
	if nlogs != 1 {
		t.Errorf("old logs not removed: %v", names)
	}
	l = openT(t, dir, Options{})
	if got := dump(l); got != want {
		t.Errorf("after compaction and reopen:\n%s\nwant:\n%s", got, want)
	}
	if l.compact.logBytes != 0 {
		t.Errorf("log after explicit compaction has %d bytes", l.compact.logBytes)
	}
	l.Close()
}

func TestAutomaticCompaction(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{NoSync: true, CompactMinBytes: 16 << 10, CompactRatio: 1.5})
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	commitT(t, l, &txn)
	for i := range 2000 {
		var txn Txn
		txn.SetValue(JobID{1, 0}, "Counter", classad.Int(int64(i)))
		commitT(t, l, &txn)
	}
	want := dump(l)
	l.Close() // finishes a compaction under way
	gens := 0
	for _, n := range dirNames(t, dir) {
		if g, ok := parseGen(n, snapshotPrefix); ok {
			gens = int(g)
		}
	}
	if gens < 2 {
		t.Errorf("expected several automatic compactions, newest snapshot is generation %d", gens)
	}
	l = openT(t, dir, Options{})
	defer l.Close()
	if got := dump(l); got != want {
		t.Errorf("reopened:\n%s\nwant:\n%s", got, want)
	}
}

// TestCrashDuringCompaction rebuilds the directory as a crash would leave
// it at each step of a compaction, and checks that each recovers the queue.
func TestCrashDuringCompaction(t *testing.T) {
	base := t.TempDir()
	ctx := context.Background()
	l := openT(t, base, Options{})
	var txn Txn
	for p := range 50 {
		txn.NewJob(JobID{1, p}, jobAd(1, p))
	}
	commitT(t, l, &txn)
	if err := l.Compact(ctx); err != nil { // snapshot.2, log.2
		t.Fatal(err)
	}
	txn = Txn{}
	txn.Destroy(JobID{1, 3})
	txn.SetValue(JobID{1, 4}, "JobStatus", classad.Int(5))
	commitT(t, l, &txn)
	want := dump(l)
	// What the next compaction would write: generation 3 of the same queue.
	if _, err := writeSnapshot(base, 3, l.q.jobs, l.q.reserved, l.q.nextCluster, false); err != nil {
		t.Fatal(err)
	}
	l.Close()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	snap2, log2, snap3 := read(snapshotName(2)), read(logName(2)), read(snapshotName(3))
	steps := map[string]map[string][]byte{
		"log rotated": {snapshotName(2): snap2, logName(2): log2, logName(3): nil},
		"snapshot half written": {snapshotName(2): snap2, logName(2): log2, logName(3): nil,
			snapshotName(3) + tmpSuffix: snap3[:len(snap3)/2]},
		"snapshot written, not renamed": {snapshotName(2): snap2, logName(2): log2, logName(3): nil,
			snapshotName(3) + tmpSuffix: snap3},
		"renamed, old files left": {snapshotName(2): snap2, logName(2): log2, logName(3): nil,
			snapshotName(3): snap3},
		"old snapshot removed": {logName(2): log2, logName(3): nil, snapshotName(3): snap3},
		"done":                 {logName(3): nil, snapshotName(3): snap3},
	}
	for name, files := range steps {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range files {
				if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := openT(t, dir, Options{})
			if got := dump(l); got != want {
				t.Errorf("recovered:\n%s\nwant:\n%s", got, want)
			}
			var txn Txn
			txn.NewJob(JobID{5, 0}, jobAd(5, 0))
			commitT(t, l, &txn)
			after := dump(l)
			l.Close()
			for _, n := range dirNames(t, dir) {
				if strings.HasSuffix(n, tmpSuffix) {
					t.Errorf("temporary file %s left", n)
				}
			}
			l = openT(t, dir, Options{})
			defer l.Close()
			if got := dump(l); got != after {
				t.Errorf("reopened again:\n%s\nwant:\n%s", got, after)
			}
		})
	}
}

func TestDamagedSnapshotIsAnError(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{})
	var txn Txn
	txn.NewJob(JobID{1, 0}, jobAd(1, 0))
	commitT(t, l, &txn)
	if err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := filepath.Join(dir, snapshotName(2))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open with a cut snapshot = %v, want ErrCorrupt", err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

package jobqueue

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
)

// recover rebuilds the queue from the newest snapshot and the logs after
// it, truncates a torn tail, removes leftovers of interrupted compactions
// and opens the last log for appending.
func (l *Log) recover() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	var snaps, logs []uint64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			// A snapshot whose writer crashed before renaming it.
			l.log.Info("removing unfinished snapshot", "file", name)
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return err
			}
			continue
		}
		if g, ok := parseGen(name, snapshotPrefix); ok {
			snaps = append(snaps, g)
		} else if g, ok := parseGen(name, logPrefix); ok {
			logs = append(logs, g)
		}
	}
	slices.Sort(logs)
	base := uint64(0)
	if len(snaps) > 0 {
		base = slices.Max(snaps)
		size, err := l.loadSnapshot(filepath.Join(l.dir, snapshotName(base)))
		if err != nil {
			return err
		}
		l.compact.liveBytes = size
	}
	l.files = fileSet{dir: l.dir, snapGen: base}
	// A snapshot covers the logs before its own generation; those still
	// here were left by a crash before the cleanup.
	var stale []string
	for _, g := range snaps {
		if g < base {
			stale = append(stale, snapshotName(g))
		}
	}
	i, _ := slices.BinarySearch(logs, base)
	for _, g := range logs[:i] {
		stale = append(stale, logName(g))
	}
	logs = logs[i:]
	first := max(base, 1)
	for j, g := range logs {
		if g != first+uint64(j) {
			return &CorruptError{File: filepath.Join(l.dir, logName(first+uint64(j))), Reason: "log missing"}
		}
	}
	owned := make(map[*classad.ClassAd]bool)
	var size int64
	for j, g := range logs {
		size, err = l.replayLog(filepath.Join(l.dir, logName(g)), j == len(logs)-1, owned)
		if err != nil {
			return err
		}
		l.compact.logBytes += size
	}
	for _, name := range stale {
		l.log.Info("removing file replaced by a snapshot", "file", name)
		if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
			return err
		}
	}
	if len(logs) == 0 {
		f, err := createLog(l.dir, first, l.opts.NoSync)
		if err != nil {
			return err
		}
		l.files.f, l.files.gen = f, first
		return nil
	}
	last := logs[len(logs)-1]
	f, err := os.OpenFile(filepath.Join(l.dir, logName(last)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	l.files.f, l.files.gen, l.files.size = f, last, size
	l.log.Info("job queue recovered", "jobs", len(l.q.jobs), "snapshot", base, "logs", len(logs))
	return nil
}

// frames calls fn with each intact frame of the file at path. At a bad
// frame it returns the frame's offset and errBadFrame; the caller decides
// whether that is a torn tail.
func frames(f *os.File, fn func(payload []byte, off int64) error) (end int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	fr := frameReader{r: bufio.NewReaderSize(f, 1<<20), limit: st.Size()}
	for {
		payload, off, err := fr.next()
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return off, err
		}
		if err := fn(payload, off); err != nil {
			return off, err
		}
	}
}

// checkTail decides about a bad frame at off in f: a torn tail (nothing
// intact after it) is cut off when allowed; anything else is corruption.
func checkTail(f *os.File, off int64, truncate bool) error {
	path := f.Name()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	rest := make([]byte, st.Size()-off-1)
	if _, err := f.ReadAt(rest, off+1); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if validFrameAfter(rest) {
		return &CorruptError{File: path, Offset: off, Reason: "damaged frame followed by intact ones"}
	}
	if !truncate {
		return &CorruptError{File: path, Offset: off, Reason: "damaged frame at end of a file that must be whole"}
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("truncate torn tail of %s: %w", path, err)
	}
	return f.Sync()
}

// replayLog applies the log at path. Only the last log may end in a torn
// tail: an earlier one was complete and synced before the next was begun.
// The history records of its retirements that follow the history file's
// last one become pending, for Open to append.
func (l *Log) replayLog(path string, last bool, owned map[*classad.ClassAd]bool) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	end, err := frames(f, func(payload []byte, off int64) error {
		d := newDecoder(payload)
		seq := -1 // number of the frame's next history record
		for d.more() {
			op, err := d.op()
			if err == nil {
				switch op.kind {
				case opHistorySeq:
					seq = op.id.Cluster
					continue
				case OpRetire:
					if seq < 0 {
						err = errors.New("retirement without a history record number")
					}
				case opNewCluster, opNextCluster, opReserve, OpUseCluster, OpNewJob, OpSet, OpDelete, OpDestroy:
				default:
					err = fmt.Errorf("operation %s does not belong in a log", op.kind)
				}
			}
			if err == nil {
				err = l.q.apply(op, owned)
			}
			if err != nil {
				return &CorruptError{File: path, Offset: off, Reason: err.Error()}
			}
			if op.kind == OpRetire {
				if seq >= l.history.next {
					l.history.pending = append(l.history.pending, historyRecord{seq: seq, ad: op.ad})
				}
				seq++
				l.histNext = max(l.histNext, seq)
			}
		}
		return nil
	})
	if errors.Is(err, errBadFrame) {
		if err := checkTail(f, end, last); err != nil {
			return 0, err
		}
		l.log.Warn("truncated torn log tail", "file", path, "offset", end)
		return end, nil
	}
	return end, err
}

// loadSnapshot reads a whole snapshot into the empty queue and returns its
// size.
func (l *Log) loadSnapshot(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ended := false
	end, err := frames(f, func(payload []byte, off int64) error {
		d := newDecoder(payload)
		for d.more() {
			op, err := d.op()
			switch {
			case err != nil:
			case ended:
				err = errors.New("data after the end")
			case op.kind == opSnapshotEnd:
				ended = true
				if op.id.Cluster != len(l.q.jobs) {
					err = fmt.Errorf("end says %d jobs, read %d", op.id.Cluster, len(l.q.jobs))
				}
			case op.kind == OpNewJob || op.kind == opNextCluster || op.kind == opReserve:
				err = l.q.apply(op, nil)
			default:
				err = fmt.Errorf("operation %s does not belong in a snapshot", op.kind)
			}
			if err != nil {
				return &CorruptError{File: path, Offset: off, Reason: err.Error()}
			}
		}
		return nil
	})
	if errors.Is(err, errBadFrame) {
		return 0, &CorruptError{File: path, Offset: end, Reason: "damaged frame"}
	}
	if err != nil {
		return 0, err
	}
	if !ended {
		return 0, &CorruptError{File: path, Offset: end, Reason: "snapshot ends early"}
	}
	return end, nil
}

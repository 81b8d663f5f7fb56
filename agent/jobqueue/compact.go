package jobqueue

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"harrier.dev/harrier/classad"
)

// snapshotFrameBytes is the payload size at which a snapshot starts a new
// frame, so that reading one back never holds more than a frame or so.
const snapshotFrameBytes = 1 << 20

// compaction is the committer's bookkeeping for snapshots.
type compaction struct {
	running bool
	done    chan compactResult // capacity 1, so the writer never blocks
	wanted  []*request         // Compact calls waiting for the next compaction
	waiting []*request         // Compact calls waiting for the running one

	logBytes  int64 // bytes in the logs the newest snapshot does not cover
	liveBytes int64 // estimate of a snapshot's size now
	retryAt   int64 // after a failure, logBytes to wait for

	// Growth since the current log was started, which a compaction under
	// way will not cover.
	rotLogBytes, rotAdBytes int64
}

type compactResult struct {
	gen  uint64
	size int64
	err  error
}

// grew accounts for a group written to the current log.
func (c *compaction) grew(frameBytes, adBytes int64) {
	c.logBytes += frameBytes
	c.liveBytes += adBytes
	c.rotLogBytes += frameBytes
	c.rotAdBytes += adBytes
}

// Compact writes a snapshot of the queue and removes the logs it covers.
// It returns once that is durable. Compaction also runs by itself as the
// logs grow (see [Options.CompactRatio]).
func (l *Log) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{compact: true, done: make(chan struct{})}
	if err := l.submit(ctx, r); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// maybeCompact starts a compaction if one was asked for or the logs have
// outgrown the queue. It runs on the committer.
func (l *Log) maybeCompact() {
	c := &l.compact
	if c.running {
		return
	}
	auto := l.opts.CompactRatio > 0 && c.logBytes >= l.opts.CompactMinBytes &&
		c.logBytes >= c.retryAt && float64(c.logBytes) > l.opts.CompactRatio*float64(c.liveBytes)
	if len(c.wanted) == 0 && !auto {
		return
	}
	// The logs a snapshot replaces must not be the only place left that
	// holds history records.
	if len(l.history.pending) > 0 {
		l.writeHistory(nil)
		if n := len(l.history.pending); n > 0 {
			l.compactFailed(fmt.Errorf("%d history records not yet written", n))
			return
		}
	}
	// Later commits go to the next log, so the queue as of now is exactly
	// what the snapshot must hold; the writer gets its own copy of the map
	// (the ads are never changed in place once published).
	if err := l.files.rotate(l.opts.NoSync); err != nil {
		l.compactFailed(err)
		return
	}
	c.running = true
	c.waiting, c.wanted = c.wanted, nil
	c.rotLogBytes, c.rotAdBytes = 0, 0
	gen := l.files.gen
	jobs := maps.Clone(l.q.jobs)
	reserved := maps.Clone(l.q.reserved)
	next := l.q.nextCluster
	l.log.Info("compaction started", "generation", gen, "jobs", len(jobs))
	go func() {
		size, err := writeSnapshot(l.dir, gen, jobs, reserved, next, l.opts.NoSync)
		c.done <- compactResult{gen: gen, size: size, err: err}
	}()
}

// finishCompaction installs a written snapshot: the files it replaces are
// removed. It runs on the committer, or in Close after the committer ended.
func (l *Log) finishCompaction(res compactResult) {
	c := &l.compact
	c.running = false
	if res.err != nil {
		l.compactFailed(res.err)
		return
	}
	old := l.files.snapGen
	l.files.snapGen = res.gen
	c.logBytes, c.liveBytes = c.rotLogBytes, res.size+c.rotAdBytes
	c.retryAt = 0
	removed := removeOlder(l.dir, res.gen, l.log)
	if removed && !l.opts.NoSync {
		if err := syncDir(l.dir); err != nil {
			l.log.Warn("compaction cleanup", "err", err)
		}
	}
	l.log.Info("compaction done", "generation", res.gen, "previous", old, "bytes", res.size)
	for _, r := range c.waiting {
		close(r.done)
	}
	c.waiting = nil
}

func (l *Log) compactFailed(err error) {
	c := &l.compact
	err = fmt.Errorf("compaction: %w", err)
	l.log.Error("compaction failed", "err", err)
	c.retryAt = 2 * c.logBytes // do not retry on every commit
	for _, r := range c.waiting {
		r.err = err
		close(r.done)
	}
	for _, r := range c.wanted {
		r.err = err
		close(r.done)
	}
	c.waiting, c.wanted = nil, nil
}

// removeOlder removes the snapshots and logs older than generation gen,
// which a snapshot of generation gen replaces. It reports whether it
// removed anything.
func removeOlder(dir string, gen uint64, log *slog.Logger) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("compaction cleanup", "err", err)
		return false
	}
	removed := false
	for _, e := range entries {
		g, ok := parseGen(e.Name(), snapshotPrefix)
		if !ok {
			g, ok = parseGen(e.Name(), logPrefix)
		}
		if !ok || g >= gen {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("compaction cleanup", "err", err)
			continue
		}
		removed = true
	}
	return removed
}

// writeSnapshot saves jobs, the open cluster reservations and the cluster
// counter as snapshot gen, via a temporary file that is synced before it
// is renamed into place, and returns the snapshot's size.
func writeSnapshot(dir string, gen uint64, jobs map[JobID]*classad.ClassAd, reserved map[int]string, next int, noSync bool) (size int64, err error) {
	tmp := filepath.Join(dir, snapshotName(gen)+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("create snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	var enc encoder
	enc.buf, _ = beginFrame(nil)
	enc.op(Op{kind: opNextCluster, id: JobID{Cluster: next}})
	for _, c := range slices.Sorted(maps.Keys(reserved)) {
		enc.op(Op{kind: opReserve, id: JobID{Cluster: c}, name: reserved[c]})
	}
	write := func() error {
		if err := finishFrame(enc.buf, 0); err != nil {
			return err
		}
		if _, err := f.Write(enc.buf); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
		size += int64(len(enc.buf))
		enc.buf, _ = beginFrame(enc.buf[:0])
		enc.reset()
		return nil
	}
	for _, id := range sortedIDs(jobs) {
		enc.ad(jobs[id], OpNewJob, opNewJobLike, &id)
		if len(enc.buf) >= snapshotFrameBytes {
			if err := write(); err != nil {
				return 0, err
			}
		}
	}
	enc.op(Op{kind: opSnapshotEnd, id: JobID{Cluster: len(jobs)}})
	if err := write(); err != nil {
		return 0, err
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("sync snapshot: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("close snapshot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, snapshotName(gen))); err != nil {
		return 0, fmt.Errorf("install snapshot: %w", err)
	}
	if !noSync {
		if err := syncDir(dir); err != nil {
			return 0, err
		}
	}
	return size, nil
}

package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"

	"harrier.dev/harrier/classad"
)

// Log is the embedded [Store]: a group-commit append log with snapshots,
// kept in one directory. Its methods are safe for concurrent use.
type Log struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File

	// mu guards q against the committer's changes. Only the committer
	// goroutine changes q, so it reads q without mu.
	mu sync.RWMutex
	q  *queue

	// cmu guards the fields up to done.
	cmu     sync.Mutex
	pending []*request
	closed  bool
	// failed is set when memory may no longer match the disk (a checked
	// transaction did not apply): nothing commits after. A failed write
	// does not set it: the write is undone and the store goes on.
	failed error
	wake   chan struct{} // tells the committer there is work; capacity 1
	done   chan struct{} // closed when the committer returns

	// Owned by the committer goroutine (and by Open and Close around it).
	files    fileSet
	frame    []byte
	compact  compaction
	history  history
	histNext int // number of the next history record (OpRetire) committed
	ownedBuf map[*classad.ClassAd]bool
}

// request is one Commit or NextCluster waiting for the committer.
type request struct {
	txn     *Txn
	payload []byte // txn encoded
	// The part of payload that adds jobs (a live-size estimate), and the
	// OpRetire operations in txn; int32 keeps a request in a small
	// allocation: a transaction is at most maxTxnPayload bytes.
	adBytes, retires int32
	alloc            *Op  // a NextCluster call: the reservation (owner, then all)
	compact          bool // a Compact call
	err              error
	done             chan struct{}
}

// maxTxnPayload is the largest encoded transaction: a frame also holds the
// number of its first history record.
const maxTxnPayload = maxFramePayload - 16

// Open opens the store in dir, creating dir if needed, and recovers the
// queue from its snapshot and logs. Only one Log may have dir open at a
// time, in any process.
func Open(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open job queue: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{
		dir:  dir,
		opts: opts,
		log:  opts.Logger.With("jobqueue", dir),
		lock: lock,
		q:    newQueue(),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	l.compact.done = make(chan compactResult, 1)
	// The history first: replaying the logs collects the records that
	// follow its last one.
	if err := l.history.open(dir, opts.NoSync, l.log); err != nil {
		lock.Close()
		return nil, fmt.Errorf("open job queue %s: %w", dir, err)
	}
	if err := l.recover(); err != nil {
		l.files.close()
		l.history.close()
		lock.Close()
		return nil, fmt.Errorf("open job queue %s: %w", dir, err)
	}
	l.histNext = max(l.histNext, l.history.next)
	if p := l.history.pending; len(p) > 0 {
		if p[0].seq > l.history.next {
			l.log.Warn("history file lacks records the logs no longer hold", "from", l.history.next, "to", p[0].seq-1)
		}
		l.log.Info("appending to the history the retirements a crash kept out of it", "records", len(p))
		l.writeHistory(nil)
	}
	go l.run()
	return l, nil
}

// Commit implements [Store].
func (l *Log) Commit(ctx context.Context, txn *Txn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var enc encoder
	adBytes, retires := 0, 0
	for i, op := range txn.ops {
		before := len(enc.buf)
		if err := enc.op(op); err != nil {
			return fmt.Errorf("commit: %w", opError(i, op, err))
		}
		switch op.kind {
		case OpNewJob:
			adBytes += len(enc.buf) - before
		case OpRetire:
			retires++
		}
	}
	if len(enc.buf) > maxTxnPayload {
		return fmt.Errorf("commit: %d bytes: %w", len(enc.buf), ErrTooLarge)
	}
	if err := l.fault(txn, false); err != nil {
		return err
	}
	r := &request{txn: txn, payload: enc.buf, adBytes: int32(adBytes), retires: int32(retires), done: make(chan struct{})}
	if err := l.submit(ctx, r); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return l.fault(txn, true)
}

// fault calls Options.Fault, if set.
func (l *Log) fault(txn *Txn, durable bool) error {
	if l.opts.Fault == nil {
		return nil
	}
	if err := l.opts.Fault(txn, durable); err != nil {
		return fmt.Errorf("commit: injected fault: %w", err)
	}
	return nil
}

// NextCluster implements [Store].
func (l *Log) NextCluster(ctx context.Context, owner string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if owner == "" {
		return 0, errors.New("next cluster: no owner")
	}
	r := &request{alloc: &Op{kind: opReserve, name: owner}, done: make(chan struct{})}
	if err := l.submit(ctx, r); err != nil {
		return 0, fmt.Errorf("next cluster: %w", err)
	}
	return r.alloc.id.Cluster, nil
}

// submit queues r for the committer and waits until it is durable.
func (l *Log) submit(ctx context.Context, r *request) error {
	l.cmu.Lock()
	switch {
	case l.closed:
		l.cmu.Unlock()
		return ErrClosed
	case l.failed != nil:
		l.cmu.Unlock()
		return l.failed
	}
	l.pending = append(l.pending, r)
	l.cmu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get implements [Store].
func (l *Log) Get(id JobID) (*classad.ClassAd, bool) {
	l.mu.RLock()
	ad, ok := l.q.jobs[id]
	l.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return ad.Copy(), true
}

// Scan implements [Store]. It holds up commits only while it copies the
// map of jobs, not while fn runs.
func (l *Log) Scan(fn func(id JobID, ad *classad.ClassAd) bool) {
	l.mu.RLock()
	all := make([]scanEntry, 0, len(l.q.jobs))
	for id, ad := range l.q.jobs {
		all = append(all, scanEntry{id, ad})
	}
	l.mu.RUnlock()
	sortByID(all)
	for _, e := range all {
		if !fn(e.id, e.ad) {
			return
		}
	}
}

type scanEntry struct {
	id JobID
	ad *classad.ClassAd
}

// sortByID sorts entries by JobID. Sorting the whole queue by comparisons
// for every Scan was most of the cost of a query or an advertisement of a
// large queue; a radix sort on the id (cluster, then proc, as one 64-bit
// key) costs a few passes over the entries, fewer when the ids share their
// high bits, as they usually do.
func sortByID(all []scanEntry) {
	if len(all) < 256 {
		slices.SortFunc(all, func(a, b scanEntry) int { return a.id.Compare(b.id) })
		return
	}
	keys := make([]uint64, len(all))
	var diff uint64 // the bits in which some keys differ
	for i, e := range all {
		k, ok := idKey(e.id)
		if !ok {
			slices.SortFunc(all, func(a, b scanEntry) int { return a.id.Compare(b.id) })
			return
		}
		keys[i] = k
		diff |= k ^ keys[0]
	}
	tmp := make([]scanEntry, len(all))
	tmpKeys := make([]uint64, len(all))
	src, dst, srcKeys, dstKeys := all, tmp, keys, tmpKeys
	for shift := 0; shift < 64; shift += 16 {
		if diff>>shift&0xffff == 0 {
			continue // every key has the same digit here
		}
		var count [1 << 16]int
		for _, k := range srcKeys {
			count[k>>shift&0xffff]++
		}
		pos := 0
		for d, n := range count {
			count[d] = pos
			pos += n
		}
		for i, k := range srcKeys {
			d := k >> shift & 0xffff
			dst[count[d]], dstKeys[count[d]] = src[i], k
			count[d]++
		}
		src, dst, srcKeys, dstKeys = dst, src, dstKeys, srcKeys
	}
	if &src[0] != &all[0] {
		copy(all, src)
	}
}

// idKey packs id into a key that sorts as the id does, if it fits: a
// cluster number below 2^32 and a proc from -1 (a cluster's factory) up.
func idKey(id JobID) (uint64, bool) {
	if id.Cluster < 0 || id.Cluster >= 1<<32 || id.Proc < -1 || id.Proc >= 1<<32-1 {
		return 0, false
	}
	return uint64(id.Cluster)<<32 | uint64(id.Proc+1), true
}

// Len implements [Store].
func (l *Log) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.q.jobs)
}

// Close implements [Store]. Commits waiting when Close is called complete;
// later ones fail with [ErrClosed]. A compaction in progress is finished.
func (l *Log) Close() error {
	l.cmu.Lock()
	if l.closed {
		l.cmu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.cmu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
	if l.compact.running {
		l.finishCompaction(<-l.compact.done)
	}
	if len(l.history.pending) > 0 {
		l.writeHistory(nil) // else the next Open appends them from the logs
	}
	for _, r := range l.compact.wanted {
		r.err = ErrClosed
		close(r.done)
	}
	err := errors.Join(l.files.close(), l.history.close())
	if lerr := l.lock.Close(); lerr != nil {
		err = errors.Join(err, lerr)
	}
	if err != nil {
		return fmt.Errorf("close job queue %s: %w", l.dir, err)
	}
	return nil
}

// run is the committer: it takes whatever requests have queued up while
// the previous group was being written, and writes them as one group.
func (l *Log) run() {
	defer close(l.done)
	var batch []*request
	for {
		l.cmu.Lock()
		batch, l.pending = l.pending, batch[:0]
		closed := l.closed
		l.cmu.Unlock()
		if len(batch) > 0 {
			l.commitGroup(batch)
			clear(batch)
		}
		select {
		case res := <-l.compact.done:
			l.finishCompaction(res)
		default:
		}
		if !closed {
			l.maybeCompact()
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		select {
		case <-l.wake:
		case res := <-l.compact.done:
			l.finishCompaction(res)
			l.maybeCompact()
		}
	}
}

// commitGroup checks, writes, syncs and applies one group of requests,
// writes the history records it commits, then wakes the callers. A group
// that fails to be written is not applied: its callers get the error and
// the next group is written where it would have been.
func (l *Log) commitGroup(batch []*request) {
	ck := newChecker(l.q)
	accepted := make([]*request, 0, len(batch))
	frame, start := beginFrame(l.frame[:0])
	var enc encoder
	var adBytes int
	var err error // a frame that cannot be finished fails the whole group
	seq := l.histNext
	for _, r := range batch {
		if r.compact {
			l.compact.wanted = append(l.compact.wanted, r)
			continue
		}
		if err != nil {
			finish([]*request{r}, err)
			continue
		}
		if r.alloc != nil {
			r.alloc.id.Cluster, r.alloc.id.Proc = ck.reserve(r.alloc.name, l.opts.MaxReservations)
			enc.buf = enc.buf[:0]
			enc.op(*r.alloc)
			r.payload = append([]byte(nil), enc.buf...)
		} else if cerr := ck.check(r.txn); cerr != nil {
			r.err = cerr
			close(r.done)
			continue
		}
		// A transaction that retires jobs is preceded by the number of
		// its first history record, in the same frame.
		enc.buf = enc.buf[:0]
		if r.retires > 0 {
			enc.op(Op{kind: opHistorySeq, id: JobID{Cluster: seq}})
		}
		if len(frame)-start-frameHeaderSize+len(enc.buf)+len(r.payload) > maxFramePayload {
			if err = finishFrame(frame, start); err != nil {
				finish([]*request{r}, err)
				continue
			}
			frame, start = beginFrame(frame)
		}
		frame = append(frame, enc.buf...)
		frame = append(frame, r.payload...)
		seq += int(r.retires)
		adBytes += int(r.adBytes)
		accepted = append(accepted, r)
	}
	if len(accepted) == 0 {
		return
	}
	switch {
	case err != nil:
	case len(frame)-start == frameHeaderSize:
		frame = frame[:start] // the last frame would be empty
	default:
		err = finishFrame(frame, start)
	}
	if err == nil {
		err = l.files.append(frame, l.opts.NoSync)
	}
	if cap(frame) <= 4<<20 {
		l.frame = frame[:0] // keep a modest buffer for the next group
	}
	if err != nil {
		err = fmt.Errorf("job queue %s: %w", l.dir, err)
		l.log.Error("commit failed, nothing of it applied", "requests", len(accepted), "err", err)
		finish(accepted, err)
		return
	}
	if err := l.applyGroup(accepted); err != nil {
		err = fmt.Errorf("job queue %s unusable: %w", l.dir, err)
		l.log.Error("commit failed", "err", err)
		l.cmu.Lock()
		l.failed = err
		l.cmu.Unlock()
		finish(accepted, err)
		return
	}
	if seq > l.histNext {
		recs := make([]historyRecord, 0, seq-l.histNext)
		for _, r := range accepted {
			if r.retires == 0 {
				continue
			}
			for _, op := range r.txn.ops {
				if op.kind == OpRetire {
					recs = append(recs, historyRecord{seq: l.histNext + len(recs), ad: op.ad})
				}
			}
		}
		l.histNext = seq
		l.writeHistory(recs)
	}
	finish(accepted, nil)
	l.compact.grew(int64(len(frame)), int64(adBytes))
}

// finish wakes the callers of rs with err.
func finish(rs []*request, err error) {
	for _, r := range rs {
		r.err = err
		close(r.done)
	}
}

// applyGroup applies durable requests to the in-memory queue.
func (l *Log) applyGroup(rs []*request) error {
	if l.ownedBuf == nil {
		l.ownedBuf = make(map[*classad.ClassAd]bool)
	}
	owned := l.ownedBuf
	defer clear(owned) // ads become visible to readers: copy before changing
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		if r.alloc != nil {
			if err := l.q.apply(*r.alloc, owned); err != nil {
				return fmt.Errorf("apply checked reservation: %w", err)
			}
			continue
		}
		for i, op := range r.txn.ops {
			if err := l.q.apply(op, owned); err != nil {
				return fmt.Errorf("apply checked transaction: %w", opError(i, op, err))
			}
		}
	}
	return nil
}

// sortedIDs returns the keys of jobs in ascending order.
func sortedIDs(jobs map[JobID]*classad.ClassAd) []JobID {
	ids := make([]JobID, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, JobID.Compare)
	return ids
}

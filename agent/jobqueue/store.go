package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"harrier.dev/harrier/classad"
)

// Store is a durable job queue. [Log] is the embedded implementation;
// package pgqueue keeps the queue in PostgreSQL. Package storetest is the
// suite of tests of this contract that both pass.
type Store interface {
	// Commit applies txn atomically and returns once it is durable. It
	// fails, applying nothing, with ErrNotFound or ErrExists if an
	// operation names a job that is not, or already is, in the queue at
	// that point of the transaction, and with ErrNotReserved if it uses a
	// cluster reservation that is not open. Concurrent Commits share
	// fsyncs. A Commit that fails to write (a full disk) applies nothing,
	// and the store takes further Commits, which succeed once the disk
	// has room again. If ctx ends first Commit returns ctx.Err(), and the
	// transaction may or may not have been applied.
	Commit(ctx context.Context, txn *Txn) error
	// Get returns a copy of the committed ad of job id, which the caller
	// may keep and modify.
	Get(id JobID) (*classad.ClassAd, bool)
	// Scan calls fn for each job in ascending JobID order until fn returns
	// false. It sees the queue as of one moment between commits, and does
	// not hold up commits while fn runs. The ads are shared and read-only:
	// Copy one before changing it. The store never changes an ad it has
	// handed out: a change to a job replaces its ad, and a job not
	// changed keeps its ad (the agent's advertiser keeps what it derived
	// from each ad by its pointer).
	Scan(fn func(id JobID, ad *classad.ClassAd) bool)
	// NextCluster durably reserves for owner, and returns, a cluster number
	// that has never been returned or used before, even across crashes and
	// compactions. The reservation stays open, across restarts, until a
	// transaction uses it ([Txn.UseCluster]); an owner holds a bounded
	// number of open reservations (see [Options.MaxReservations]), and a
	// new one beyond that ends the owner's oldest.
	NextCluster(ctx context.Context, owner string) (int, error)
	// Len reports the number of jobs in the queue.
	Len() int
	// Close waits for commits in progress and releases the store.
	Close() error
}

// HistoryStore keeps the ads of jobs that left the queue ([Txn.Retire]).
type HistoryStore interface {
	// History calls fn with each ad, oldest first, until fn returns false.
	// It sees every retirement whose Commit returned before it was called.
	History(fn func(ad *classad.ClassAd) bool) error
}

// Options tune a [Log].
type Options struct {
	// Logger receives recovery and compaction events; nil discards them.
	Logger *slog.Logger
	// NoSync skips fsync: commits survive a process crash but not a
	// machine crash. For tests and benchmarks only.
	NoSync bool
	// CompactRatio starts a compaction when the logs reach this many times
	// the size of the live queue (estimated). Zero means 4; negative
	// disables automatic compaction.
	CompactRatio float64
	// CompactMinBytes is the log size below which no compaction starts.
	// Zero means 16 MiB.
	CompactMinBytes int64
	// MaxReservations bounds the open cluster reservations of one owner
	// (NextCluster numbers not yet used), so that reserving and never
	// submitting cannot grow the store. Zero means 64.
	MaxReservations int
	// Fault injects failures, for tests that crash a store's user between
	// its steps. If not nil it is called twice for each Commit: before
	// the transaction is written (durable false) and once it is durable
	// (durable true). An error it returns fails that Commit with it:
	// before, applying nothing; after, with the transaction applied, as a
	// crash between the write and the caller's hearing of it leaves it.
	Fault func(txn *Txn, durable bool) error
}

const (
	defaultCompactRatio    = 4
	defaultCompactMinBytes = 16 << 20
	defaultMaxReservations = 64
)

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CompactRatio == 0 {
		o.CompactRatio = defaultCompactRatio
	}
	if o.CompactMinBytes == 0 {
		o.CompactMinBytes = defaultCompactMinBytes
	}
	if o.MaxReservations <= 0 {
		o.MaxReservations = defaultMaxReservations
	}
	return o
}

var (
	// ErrNotFound means a transaction acts on a job that is not in the queue.
	ErrNotFound = errors.New("job not in queue")
	// ErrExists means a transaction adds a job that is already in the queue.
	ErrExists = errors.New("job already in queue")
	// ErrNotReserved means a transaction uses a cluster that is not
	// reserved for the owner it names: never reserved, reserved for
	// someone else, or used already.
	ErrNotReserved = errors.New("cluster not reserved for this owner")
	// ErrBadID refuses job ids no job can have. Proc -1 is allowed: it is
	// where HTCondor keeps a cluster's own ad (the agent stores
	// late-materialization factories there).
	ErrBadID = errors.New("cluster must be positive and proc at least -1")
	// ErrUnavailable means a store kept in a database server cannot reach
	// it: the Commit or NextCluster was not applied (unless the connection
	// was lost while the database committed it), and the store takes
	// further ones, which succeed once the database is back. Get, Scan and
	// Len go on answering from the store's copy of the queue meanwhile.
	ErrUnavailable = errors.New("job queue database unavailable")
	// ErrLocked means another store, in this process or another, has the
	// directory (or database) open.
	ErrLocked = errors.New("job queue in use by another store")
	// ErrClosed means the store has been closed.
	ErrClosed = errors.New("job queue closed")
	// ErrTooLarge means a transaction does not fit in one log frame.
	ErrTooLarge = errors.New("transaction too large")
	// ErrCorrupt is matched (errors.Is) by every [*CorruptError].
	ErrCorrupt = errors.New("job queue corrupt")
)

// CorruptError reports damaged data that recovery must not skip.
type CorruptError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damaged frame
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// opError says which operation of a transaction failed.
func opError(i int, op Op, err error) error {
	return fmt.Errorf("op %d (%s %s): %w", i, op.kind, op.id, err)
}

var (
	_ Store        = (*Log)(nil)
	_ HistoryStore = (*Log)(nil)
)

package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

// Options tune a [Store].
type Options struct {
	// Agent names the agent whose queue the store keeps (HTCondor's
	// schedd Name, the first part of its jobs' GlobalJobId). Several
	// agents share a database, each with its own queue, its own cluster
	// numbers, and one store at a time. Required.
	Agent string
	// Logger receives connection and migration events; nil discards them.
	Logger *slog.Logger
	// MaxReservations bounds the open cluster reservations of one owner,
	// as [jobqueue.Options.MaxReservations] does. Zero means 64.
	MaxReservations int
	// Timeout bounds the database's work on one commit group, connecting
	// again included; a group that takes longer fails with
	// [jobqueue.ErrUnavailable]. Zero means 30 seconds.
	Timeout time.Duration
}

// Store is the job queue kept in a PostgreSQL database. Its methods are
// safe for concurrent use.
type Store struct {
	cfg  *pgx.ConnConfig
	opts Options
	log  *slog.Logger

	mu sync.RWMutex // guards m against the committer's changes
	m  *mirror

	cmu     sync.Mutex // guards the fields up to done
	pending []*request
	closed  bool
	wake    chan struct{} // tells the committer there is work; capacity 1
	done    chan struct{} // closed when the committer returns

	// Owned by the committer goroutine (and by Open and Close around it).
	conn  *pgx.Conn // nil once lost
	stale bool      // the database may hold what the mirror does not: reload it
}

// request is one Commit or NextCluster waiting for the committer.
type request struct {
	txn     *jobqueue.Txn
	events  []joblog.Event // written with txn
	owner   string         // a NextCluster call: for whom
	cluster int            // and its answer
	err     error
	done    chan struct{}
}

// errDiverged means the database does not hold what the store's copy of
// the queue says it does: something else wrote to it.
var errDiverged = errors.New("database differs from the agent's copy of the queue")

// Open connects to the database named by dsn (a libpq connection string
// or postgres:// URL), brings its schema up to date and reads the queue of
// opts.Agent. Only one Store may have an agent's queue open at a time;
// another fails with [jobqueue.ErrLocked].
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Agent == "" {
		return nil, errors.New("open job queue: no agent name")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open job queue: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxReservations <= 0 {
		opts.MaxReservations = 64
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	s := &Store{
		cfg:  cfg,
		opts: opts,
		log:  opts.Logger.With("jobqueue", Describe(cfg), "agent", opts.Agent),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	if s.conn, err = s.connect(ctx); err != nil {
		return nil, fmt.Errorf("open job queue %s: %w", Describe(cfg), err)
	}
	if s.m, err = load(ctx, s.conn, opts.Agent); err != nil {
		s.conn.Close(context.Background())
		return nil, fmt.Errorf("open job queue %s: %w", Describe(cfg), err)
	}
	go s.run()
	return s, nil
}

// Describe names the database of cfg for messages: user, host and
// database, never the password.
func Describe(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s/%s", cfg.User, cfg.Host, cfg.Database)
}

// lockKey is the SQL expression of the session advisory lock a Store
// holds on its agent's queue, for the agent's name in $1.
const lockKey = "hashtextextended('harrier job queue of ' || $1, 0)"

// connect opens a connection, takes the agent's queue for this store and
// brings the schema up to date.
func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", jobqueue.ErrUnavailable, err)
	}
	// A store that has just lost its connection may hold the lock until
	// the server notices: wait a little for it.
	_, err = conn.Exec(ctx, "SET lock_timeout = '2s'")
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock("+lockKey+")", s.opts.Agent)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "RESET lock_timeout")
	}
	if err != nil {
		conn.Close(context.Background())
		if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "55P03" { // lock_not_available
			return nil, jobqueue.ErrLocked
		}
		return nil, fmt.Errorf("%w: %w", jobqueue.ErrUnavailable, err)
	}
	n, err := schema.Migrate(ctx, conn, map[string]string{"harrier.agent": s.opts.Agent})
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	if n > 0 {
		s.log.Info("job queue schema migrated", "migrations", n)
	}
	// An agent new to the database counts its clusters from 1.
	if _, err := conn.Exec(ctx, "INSERT INTO queue_counters (agent, next_cluster) VALUES ($1, 1) ON CONFLICT (agent) DO NOTHING", s.opts.Agent); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("%w: %w", jobqueue.ErrUnavailable, err)
	}
	return conn, nil
}

// Commit implements [jobqueue.Store]. While the database is unreachable
// it fails with [jobqueue.ErrUnavailable].
func (s *Store) Commit(ctx context.Context, txn *jobqueue.Txn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{txn: txn, done: make(chan struct{})}
	if err := s.submit(ctx, r); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// CommitEvents is Commit that also records events, the job events the
// transaction's moves make, in the same database transaction: they are in
// queue_events (the job_events view) if and only if txn is applied.
func (s *Store) CommitEvents(ctx context.Context, txn *jobqueue.Txn, events []joblog.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{txn: txn, events: events, done: make(chan struct{})}
	if err := s.submit(ctx, r); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// NextCluster implements [jobqueue.Store].
func (s *Store) NextCluster(ctx context.Context, owner string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if owner == "" {
		return 0, errors.New("next cluster: no owner")
	}
	r := &request{owner: owner, done: make(chan struct{})}
	if err := s.submit(ctx, r); err != nil {
		return 0, fmt.Errorf("next cluster: %w", err)
	}
	return r.cluster, nil
}

// submit queues r for the committer and waits until it is durable.
func (s *Store) submit(ctx context.Context, r *request) error {
	s.cmu.Lock()
	if s.closed {
		s.cmu.Unlock()
		return jobqueue.ErrClosed
	}
	s.pending = append(s.pending, r)
	s.cmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get implements [jobqueue.Store], from the store's copy of the queue.
func (s *Store) Get(id jobqueue.JobID) (*classad.ClassAd, bool) {
	s.mu.RLock()
	ad, ok := s.m.jobs[id]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return ad.Copy(), true
}

// Scan implements [jobqueue.Store], from the store's copy of the queue.
// It holds up commits only while it copies the map of jobs.
func (s *Store) Scan(fn func(id jobqueue.JobID, ad *classad.ClassAd) bool) {
	type entry struct {
		id jobqueue.JobID
		ad *classad.ClassAd
	}
	s.mu.RLock()
	all := make([]entry, 0, len(s.m.jobs))
	for id, ad := range s.m.jobs {
		all = append(all, entry{id, ad})
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b entry) int { return a.id.Compare(b.id) })
	for _, e := range all {
		if !fn(e.id, e.ad) {
			return
		}
	}
}

// Len implements [jobqueue.Store].
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m.jobs)
}

// History implements [jobqueue.HistoryStore], reading the database on a
// connection of its own.
func (s *Store) History(fn func(ad *classad.ClassAd) bool) error {
	err := s.read("SELECT ad FROM queue_history WHERE agent = $1 ORDER BY seq", []any{s.opts.Agent}, func(_ string, ad *classad.ClassAd) bool {
		return fn(ad)
	})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// EveryAgent calls fn with each job in the queues of every agent that
// keeps its queue in the database, this one's included, in order of
// agent name and job id, until fn returns false. It reads the database
// on a connection of its own, as of one moment.
func (s *Store) EveryAgent(fn func(agent string, ad *classad.ClassAd) bool) error {
	err := s.read("SELECT ad, agent FROM queue_jobs WHERE proc >= 0 ORDER BY agent, cluster, proc", nil, fn)
	if err != nil {
		return fmt.Errorf("every agent's jobs: %w", err)
	}
	return nil
}

// read runs query, whose rows are an ad and, if it has a second column,
// the agent's name, on a connection of its own, calling fn with each.
func (s *Store) read(query string, args []any, fn func(agent string, ad *classad.ClassAd) bool) error {
	s.cmu.Lock()
	closed := s.closed
	s.cmu.Unlock()
	if closed {
		return jobqueue.ErrClosed
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", jobqueue.ErrUnavailable, err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(ctx, query, args...)
	defer rows.Close()
	for rows.Next() {
		var js []byte
		agent := s.opts.Agent
		dest := []any{&js, &agent}
		if len(rows.FieldDescriptions()) == 1 {
			dest = dest[:1]
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		ad, err := decodeAd(js)
		if err != nil {
			return err
		}
		if !fn(agent, ad) {
			return nil
		}
	}
	return rows.Err()
}

// Close implements [jobqueue.Store]. Commits waiting when Close is called
// complete; later ones fail with [jobqueue.ErrClosed].
func (s *Store) Close() error {
	s.cmu.Lock()
	if s.closed {
		s.cmu.Unlock()
		return jobqueue.ErrClosed
	}
	s.closed = true
	s.cmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
	if s.conn == nil {
		return nil
	}
	// Unlocked now: the server would release the lock only once it notices
	// the connection closed, and a store opened right after would wait.
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	_, err := s.conn.Exec(ctx, "SELECT pg_advisory_unlock("+lockKey+")", s.opts.Agent)
	return errors.Join(err, s.conn.Close(ctx))
}

// run is the committer: it takes whatever requests have queued up while
// the previous group was being written, and writes them as one database
// transaction.
func (s *Store) run() {
	defer close(s.done)
	for {
		s.cmu.Lock()
		batch := s.pending
		s.pending = nil
		closed := s.closed
		s.cmu.Unlock()
		if len(batch) > 0 {
			s.commitGroup(batch)
			continue
		}
		if closed {
			return
		}
		<-s.wake
	}
}

// commitGroup checks the requests against the queue, writes those that
// apply in one transaction, and once it is committed applies them to the
// mirror and wakes their callers. If the database cannot be reached, or
// refuses the transaction, none of them is applied.
func (s *Store) commitGroup(batch []*request) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		finish(batch, err)
		return
	}
	g := newGroup(s.m, s.opts.MaxReservations)
	accepted := make([]*request, 0, len(batch))
	for _, r := range batch {
		if r.txn == nil {
			r.cluster = g.reserve(r.owner)
		} else if err := g.check(r.txn); err != nil {
			r.err = err
			close(r.done)
			continue
		} else {
			g.events = append(g.events, r.events...)
		}
		accepted = append(accepted, r)
	}
	if len(accepted) == 0 {
		return
	}
	if !g.empty() {
		if err := write(ctx, s.conn, s.opts.Agent, g); err != nil {
			finish(accepted, s.failed(err))
			return
		}
	}
	s.mu.Lock()
	g.apply(s.m)
	s.mu.Unlock()
	finish(accepted, nil)
}

// ready makes sure the committer has a connection, and that the mirror
// holds what the database does.
func (s *Store) ready(ctx context.Context) error {
	if s.conn != nil && !s.conn.IsClosed() && !s.stale {
		return nil
	}
	if s.conn == nil || s.conn.IsClosed() {
		s.conn = nil
		conn, err := s.connect(ctx)
		if err != nil {
			return err
		}
		s.conn, s.stale = conn, true
		s.log.Info("connected to the job queue database again")
	}
	m, err := load(ctx, s.conn, s.opts.Agent)
	if err != nil {
		return s.failed(fmt.Errorf("read the queue again: %w", err))
	}
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
	s.stale = false
	return nil
}

// failed sorts out an error of the database: one that refused the work
// (the connection stays, the transaction rolled back) from a lost or
// broken connection, after which the database may or may not have
// committed ([jobqueue.ErrUnavailable]). Either way the mirror is read
// again before the next group.
func (s *Store) failed(err error) error {
	if _, ok := errors.AsType[*pgconn.PgError](err); ok && !errors.Is(err, errDiverged) && s.conn != nil && !s.conn.IsClosed() {
		// Checked against the copy, the transaction should have applied:
		// the database may hold what the copy does not.
		s.stale = true
		return fmt.Errorf("job queue database refused the commit: %w", err)
	}
	if errors.Is(err, errDiverged) {
		s.stale = true
		s.log.Error("job queue database changed behind the agent's back; reading it again", "err", err)
		return err
	}
	if s.conn != nil {
		s.conn.Close(context.Background())
		s.conn = nil
	}
	s.stale = true
	s.log.Warn("job queue database unavailable", "err", err)
	return fmt.Errorf("%w: %w", jobqueue.ErrUnavailable, err)
}

// finish wakes the callers of rs with err.
func finish(rs []*request, err error) {
	for _, r := range rs {
		r.err = err
		close(r.done)
	}
}

var (
	_ jobqueue.Store        = (*Store)(nil)
	_ jobqueue.HistoryStore = (*Store)(nil)
)

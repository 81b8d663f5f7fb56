package pgqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
)

// load reads agent's whole queue, as of one moment.
func load(ctx context.Context, conn *pgx.Conn, agent string) (*mirror, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	m := &mirror{jobs: make(map[jobqueue.JobID]*classad.ClassAd), reserved: make(map[int]string)}
	if err := tx.QueryRow(ctx, "SELECT next_cluster FROM queue_counters WHERE agent = $1", agent).Scan(&m.next); err != nil {
		return nil, fmt.Errorf("read the cluster counter: %w", err)
	}
	rows, _ := tx.Query(ctx, "SELECT cluster, owner FROM cluster_reservations WHERE agent = $1", agent)
	var c int
	var owner string
	if _, err := pgx.ForEachRow(rows, []any{&c, &owner}, func() error {
		m.reserved[c] = owner
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the reservations: %w", err)
	}
	rows, _ = tx.Query(ctx, "SELECT cluster, proc, ad FROM queue_jobs WHERE agent = $1", agent)
	d := newDecoders(runtime.GOMAXPROCS(0))
	var id jobqueue.JobID
	var js []byte // a new slice for each row
	_, err = pgx.ForEachRow(rows, []any{&id.Cluster, &id.Proc, &js}, func() error {
		d.add(id, js)
		return nil
	})
	jobs, derr := d.wait()
	if err = errors.Join(err, derr); err != nil {
		return nil, fmt.Errorf("read the jobs: %w", err)
	}
	m.jobs = jobs
	return m, tx.Commit(ctx)
}

// decoders decode job ads on several goroutines while their rows arrive:
// decoding is most of the work of reading a large queue.
type decoders struct {
	rows chan encoded
	wg   sync.WaitGroup
	out  []map[jobqueue.JobID]*classad.ClassAd // one per goroutine
	errs []error                               // the first of each goroutine
}

type encoded struct {
	id jobqueue.JobID
	js []byte
}

func newDecoders(n int) *decoders {
	d := &decoders{rows: make(chan encoded, 256), out: make([]map[jobqueue.JobID]*classad.ClassAd, n), errs: make([]error, n)}
	for i := range n {
		d.out[i] = make(map[jobqueue.JobID]*classad.ClassAd)
		d.wg.Go(func() {
			for r := range d.rows {
				if d.errs[i] != nil {
					continue
				}
				ad, err := decodeAd(r.js)
				if err != nil {
					d.errs[i] = fmt.Errorf("job %s: %w", r.id, err)
					continue
				}
				d.out[i][r.id] = ad
			}
		})
	}
	return d
}

func (d *decoders) add(id jobqueue.JobID, js []byte) { d.rows <- encoded{id, js} }

// wait returns every ad decoded, once all have been.
func (d *decoders) wait() (map[jobqueue.JobID]*classad.ClassAd, error) {
	close(d.rows)
	d.wg.Wait()
	if err := errors.Join(d.errs...); err != nil {
		return nil, err
	}
	all := d.out[0]
	for _, m := range d.out[1:] {
		maps.Copy(all, m)
	}
	return all, nil
}

func decodeAd(js []byte) (*classad.ClassAd, error) {
	ad := classad.New()
	if err := ad.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	return ad, nil
}

// row is a job's row, or its history record's.
type row struct {
	id     jobqueue.JobID
	owner  pgtype.Text
	status pgtype.Int4
	ad     []byte
}

func newRow(id jobqueue.JobID, ad *classad.ClassAd) (row, error) {
	js, err := ad.MarshalJSON()
	if err != nil {
		return row{}, fmt.Errorf("job %s: %w", id, err)
	}
	r := row{id: id, ad: js}
	if s, ok := ad.EvalString("Owner"); ok {
		r.owner = pgtype.Text{String: s, Valid: true}
	}
	if s, ok := ad.EvalInt("JobStatus"); ok && int64(int32(s)) == s {
		r.status = pgtype.Int4{Int32: int32(s), Valid: true}
	}
	return r, nil
}

// write makes the group's changes to agent's queue in the database, in
// one transaction, and checks that they find the rows the mirror says are
// there.
func write(ctx context.Context, conn *pgx.Conn, agent string, g *group) error {
	var gone []jobqueue.JobID
	var changed, added []row
	for id, ad := range g.jobs {
		_, had := g.base.jobs[id]
		switch {
		case ad == nil && had:
			gone = append(gone, id)
		case ad == nil:
		default:
			r, err := newRow(id, ad)
			if err != nil {
				return err
			}
			if had {
				changed = append(changed, r)
			} else {
				added = append(added, r)
			}
		}
	}
	var ended, madeC []int
	var madeO []string
	for c, o := range g.resv {
		if o == "" {
			ended = append(ended, c)
		} else {
			madeC, madeO = append(madeC, c), append(madeO, o)
		}
	}
	history := make([]row, len(g.history))
	for i, h := range g.history {
		var err error
		if history[i], err = newRow(h.id, h.ad); err != nil {
			return err
		}
	}
	events, err := eventRows(g)
	if err != nil {
		return err
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var b pgx.Batch
	want := func(n int) func(ct pgconn.CommandTag) error {
		return func(ct pgconn.CommandTag) error {
			if int(ct.RowsAffected()) != n {
				return fmt.Errorf("%s touched %d rows, the queue expected %d: %w", ct, ct.RowsAffected(), n, errDiverged)
			}
			return nil
		}
	}
	if len(gone) > 0 {
		cs, ps := ids(gone)
		b.Queue(`DELETE FROM queue_jobs WHERE agent = $1 AND (cluster, proc) IN (SELECT * FROM unnest($2::integer[], $3::integer[]))`,
			agent, cs, ps).Exec(want(len(gone)))
	}
	if len(changed) > 0 {
		cs, ps, os, ss, ads := columns(changed)
		b.Queue(`UPDATE queue_jobs AS j SET owner = u.owner, status = u.status, ad = u.ad::jsonb
			FROM unnest($2::integer[], $3::integer[], $4::text[], $5::integer[], $6::text[]) AS u(cluster, proc, owner, status, ad)
			WHERE j.agent = $1 AND j.cluster = u.cluster AND j.proc = u.proc`, agent, cs, ps, os, ss, ads).Exec(want(len(changed)))
	}
	if len(ended) > 0 {
		b.Queue(`DELETE FROM cluster_reservations WHERE agent = $1 AND cluster = ANY($2::integer[])`, agent, ended)
	}
	if len(madeC) > 0 {
		b.Queue(`INSERT INTO cluster_reservations (agent, cluster, owner) SELECT $1, * FROM unnest($2::integer[], $3::text[])`, agent, madeC, madeO)
	}
	if g.next != g.base.next {
		b.Queue(`UPDATE queue_counters SET next_cluster = $2 WHERE agent = $1`, agent, g.next).Exec(want(1))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
	}
	cols := []string{"agent", "cluster", "proc", "owner", "status", "ad"}
	for table, rows := range map[string][]row{"queue_jobs": added, "queue_history": history} {
		if len(rows) == 0 {
			continue
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := &rows[i]
			return []any{agent, r.id.Cluster, r.id.Proc, r.owner, r.status, r.ad}, nil
		}))
		if err != nil {
			return fmt.Errorf("copy into %s: %w", table, err)
		}
		if int(n) != len(rows) {
			return fmt.Errorf("copy into %s: %d rows of %d: %w", table, n, len(rows), errDiverged)
		}
	}
	if len(events) > 0 {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"queue_events"}, []string{"agent", "cluster", "proc", "owner", "time", "type", "event"},
			pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
				e := &events[i]
				return []any{agent, e.id.Cluster, e.id.Proc, e.owner, e.time, e.typ, e.event}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy into queue_events: %w", err)
		}
	}
	return tx.Commit(ctx)
}

// eventRow is a job event's row.
type eventRow struct {
	id    jobqueue.JobID
	owner pgtype.Text
	time  time.Time
	typ   int32
	event []byte
}

// eventRows makes the rows of the group's events, each with its job's
// owner: from the job's ad after the group, or for a job the group
// retired, its history record.
func eventRows(g *group) ([]eventRow, error) {
	if len(g.events) == 0 {
		return nil, nil
	}
	retired := make(map[jobqueue.JobID]*classad.ClassAd, len(g.history))
	for _, h := range g.history {
		retired[h.id] = h.ad
	}
	rows := make([]eventRow, len(g.events))
	for i, ev := range g.events {
		id := jobqueue.JobID{Cluster: ev.Cluster, Proc: ev.Proc}
		js, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("event of job %s: %w", id, err)
		}
		r := eventRow{id: id, time: ev.Time, typ: int32(ev.Type), event: js}
		ad, ok := g.jobs[id]
		if !ok {
			ad = g.base.jobs[id]
		}
		if ad == nil {
			ad = retired[id]
		}
		if ad != nil {
			if s, ok := ad.EvalString("Owner"); ok {
				r.owner = pgtype.Text{String: s, Valid: true}
			}
		}
		rows[i] = r
	}
	return rows, nil
}

func ids(all []jobqueue.JobID) (cs, ps []int32) {
	cs, ps = make([]int32, len(all)), make([]int32, len(all))
	for i, id := range all {
		cs[i], ps[i] = int32(id.Cluster), int32(id.Proc)
	}
	return cs, ps
}

func columns(rows []row) (cs, ps []int32, owners []pgtype.Text, statuses []pgtype.Int4, ads []string) {
	for _, r := range rows {
		cs = append(cs, int32(r.id.Cluster))
		ps = append(ps, int32(r.id.Proc))
		owners = append(owners, r.owner)
		statuses = append(statuses, r.status)
		ads = append(ads, string(r.ad))
	}
	return cs, ps, owners, statuses, ads
}

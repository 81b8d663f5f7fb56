package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// exitCondition is one -exit GROUPER,STATUS[,CODE] of condor_watch_q: exit
// with code when all, any or none of the tracked jobs are in status.
type exitCondition struct {
	grouper, status string
	code            int
}

func parseExitCondition(s string) (exitCondition, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return exitCondition{}, usagef("-exit %s: want GROUPER,STATUS[,CODE]", s)
	}
	c := exitCondition{grouper: parts[0], status: parts[1]}
	if !slices.Contains([]string{"all", "any", "none"}, c.grouper) {
		return c, usagef("-exit %s: GROUPER is all, any or none", s)
	}
	if !slices.Contains([]string{"active", "done", "idle", "held"}, c.status) {
		return c, usagef("-exit %s: STATUS is active, done, idle or held", s)
	}
	if len(parts) == 3 {
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 || n > 255 {
			return c, usagef("-exit %s: CODE is an exit status, 0 to 255", s)
		}
		c.code = n
	}
	return c, nil
}

// watchedJob is what watch-q knows of a tracked job; status 0 means the job
// has left the queue.
type watchedJob struct {
	batch  string
	status int64
}

// is reports whether the job is in one of condor_watch_q's statuses.
func (j *watchedJob) is(status string) bool {
	switch status {
	case "active":
		return j.status != 0
	case "done":
		return j.status == 0
	case "idle":
		return j.status == 1
	case "held":
		return j.status == 5
	}
	return false
}

// met reports whether the condition holds for the jobs.
func (c exitCondition) met(jobs map[[2]int64]*watchedJob) bool {
	n := 0
	for _, j := range jobs {
		if j.is(c.status) {
			n++
		}
	}
	switch c.grouper {
	case "all":
		return n == len(jobs)
	case "any":
		return n > 0
	}
	return n == 0
}

// runWatchQ shows the caller's batches and how their jobs progress, as
// condor_watch_q does, until an -exit condition holds or it is stopped. It
// asks the agent every -interval seconds; a tracked job that has left the
// queue is done (completed or removed).
func runWatchQ(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("watch-q")
	var users, clusters, batches, exits stringList
	tf.fs.Var(&users, "users", "track these users' jobs (names separated by commas; repeatable)")
	tf.fs.Var(&clusters, "clusters", "track these clusters (ids separated by commas; repeatable)")
	tf.fs.Var(&batches, "batches", "track the jobs of these batch names (separated by commas; repeatable)")
	tf.fs.Var(&exits, "exit", "exit when GROUPER (all, any, none) of the jobs are STATUS (active, done, idle, held), with CODE (default 0); repeatable")
	interval := tf.fs.Float64("interval", 2, "seconds between looks at the queue")
	refresh := tf.fs.Bool("refresh", isTerminal(stdout), "redraw the screen rather than append (default: when writing to a terminal)")
	tf.fs.BoolFunc("no-refresh", "append each view", func(string) error { *refresh = false; return nil })
	tf.refuse("not yet: watch-q follows the queue", "files=")
	tf.refuse("refused: "+localAgent, "collector=", "schedd=")
	tf.refuse("not yet: watch-q shows a table of batches and a summary line", "groupby=", "no-table", "progress", "row-progress",
		"no-summary", "summary-type=", "no-updated-at", "abbreviate", "color")
	tf.accept("watch-q shows a table, a summary and the time, without colour or progress bars",
		"table", "no-progress", "no-row-progress", "summary", "updated-at", "no-abbreviate", "no-color")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	if tf.fs.NArg() > 0 {
		return usagef("unexpected argument %q", tf.fs.Arg(0))
	}
	var conds []exitCondition
	for _, e := range exits {
		c, err := parseExitCondition(e)
		if err != nil {
			return err
		}
		conds = append(conds, c)
	}
	if *interval <= 0 {
		return usagef("-interval must be positive")
	}
	var batchCons []string
	for _, b := range splitCommas(batches) {
		batchCons = append(batchCons, "JobBatchName == "+classad.String(b).String())
	}
	ids := splitCommas(clusters)
	me, err := tf.me()
	if err != nil {
		return err
	}
	cons, err := jobSelection(strings.Join(batchCons, " || "), splitCommas(users), false, len(ids) > 0, 0, me)
	if err != nil {
		return err
	}
	jobs := map[[2]int64]*watchedJob{}
	var order []string // batches, as first seen
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		stream, err := client.Query(ctx, &wire.JobQueryRequest{Ids: ids, Constraint: cons})
		seen := map[[2]int64]bool{}
		if err == nil {
			err = receive(stream, func(text string) error {
				ad, err := classad.Parse(text)
				if err != nil {
					return fmt.Errorf("bad ad from the pool: %w", err)
				}
				c, _ := ad.EvalInt("ClusterId")
				p, _ := ad.EvalInt("ProcId")
				st, _ := ad.EvalInt("JobStatus")
				k := [2]int64{c, p}
				seen[k] = true
				j := jobs[k]
				if j == nil {
					owner, _ := ad.EvalString("Owner")
					name, _ := ad.EvalString("JobBatchName")
					if name == "" {
						name = "ID: " + strconv.FormatInt(c, 10)
					}
					j = &watchedJob{batch: owner + " " + name}
					jobs[k] = j
					if !slices.Contains(order, j.batch) {
						order = append(order, j.batch)
					}
				}
				j.status = st
				return nil
			})
		}
		cancel()
		if err != nil {
			return rpcError("watch-q", err)
		}
		for k, j := range jobs {
			if !seen[k] {
				j.status = 0
			}
		}
		if len(jobs) == 0 {
			fmt.Fprintln(stdout, "No jobs to track.")
			return nil
		}
		if *refresh {
			io.WriteString(stdout, "\x1b[H\x1b[2J") // home, clear screen
		}
		printWatch(stdout, jobs, order)
		for _, c := range conds {
			if c.met(jobs) {
				if c.code != 0 {
					return exitError(c.code)
				}
				return nil
			}
		}
		time.Sleep(time.Duration(*interval * float64(time.Second)))
	}
}

// printWatch prints one view: a line per batch, condor_watch_q's columns,
// a summary and the time.
func printWatch(w io.Writer, jobs map[[2]int64]*watchedJob, order []string) {
	type row struct {
		idle, run, hold, done, total int
		first, last                  [2]int64
	}
	rows := map[string]*row{}
	var sum row
	held := false
	for k, j := range jobs {
		r := rows[j.batch]
		if r == nil {
			r = &row{first: k, last: k}
			rows[j.batch] = r
		}
		for _, x := range []*row{r, &sum} {
			x.total++
			switch j.status {
			case 0, 4:
				x.done++
			case 1:
				x.idle++
			case 2:
				x.run++
			case 5:
				x.hold++
				held = true
			}
		}
		if less(k, r.first) {
			r.first = k
		}
		if less(r.last, k) {
			r.last = k
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	heads := "BATCH\tIDLE\tRUN\tDONE\tTOTAL\tJOB_IDS"
	if held {
		heads = "BATCH\tIDLE\tRUN\tHOLD\tDONE\tTOTAL\tJOB_IDS"
	}
	fmt.Fprintln(tw, heads)
	for _, b := range order {
		r := rows[b]
		cols := []string{b, count(int64(r.idle)), count(int64(r.run))}
		if held {
			cols = append(cols, count(int64(r.hold)))
		}
		cols = append(cols, count(int64(r.done)), strconv.Itoa(r.total), jobRange(r.first[0]<<32|r.first[1], r.last[0]<<32|r.last[1]))
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nTotal: %d jobs; %d done, %d idle, %d running, %d held\n", sum.total, sum.done, sum.idle, sum.run, sum.hold)
	fmt.Fprintf(w, "Updated at %s\n\n", time.Now().Format("2006-01-02 15:04:05"))
}

func less(a, b [2]int64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// splitCommas splits each value at commas, dropping empty parts.
func splitCommas(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// isTerminal reports whether w is a terminal, where watch-q redraws.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

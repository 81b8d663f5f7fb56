package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// output says how ads are printed: a table, -long (old ClassAd syntax, one
// blank line between ads) or -json (a JSON array, as condor_q -json).
type output struct {
	json, long bool
	attrs      stringList // -attributes: only these, for -long and -json
}

// flags defines -json, -long, -l and -attributes for what the ads are.
func (o *output) flags(tf toolFlags, what string) {
	tf.fs.BoolVar(&o.json, "json", false, "print the "+what+" ads as JSON")
	tf.fs.BoolVar(&o.long, "long", false, "print the whole "+what+" ads")
	tf.fs.BoolVar(&o.long, "l", false, "same as -long")
	tf.fs.Var(&o.attrs, "attributes", "with -long or -json, only these attributes (separated by commas)")
}

// project keeps only the attributes -attributes names.
func (o output) project(ad *classad.ClassAd) *classad.ClassAd {
	names := splitCommas(o.attrs)
	if len(names) == 0 {
		return ad
	}
	out := classad.New()
	for _, n := range names {
		if e, ok := ad.Lookup(n); ok {
			out.Set(n, e)
		}
	}
	return out
}

// table prints ads as the rows of a table, the form a tool prints by
// default; flush ends it (with any summary).
type table interface {
	row(ad *classad.ClassAd)
	flush()
}

// printer prints ads one by one as they arrive, in the form output says,
// so that a tool's memory does not grow with the queue (a table keeps only
// its rows' text, for aligning them).
type printer struct {
	w        io.Writer
	o        output
	newTable func(io.Writer) table
	t        table
	n        int
	buf      bytes.Buffer
}

func (o output) printer(w io.Writer, newTable func(io.Writer) table) *printer {
	return &printer{w: w, o: o, newTable: newTable}
}

// add prints one ad, given as text.
func (p *printer) add(text string) error {
	ad, err := classad.Parse(text)
	if err != nil {
		return fmt.Errorf("bad ad from the pool: %w", err)
	}
	if p.o.json || p.o.long {
		ad = p.o.project(ad)
	}
	switch {
	case p.o.json:
		b, err := ad.MarshalJSON()
		if err != nil {
			return err
		}
		// What json.MarshalIndent makes of the whole array, element by
		// element: HTML characters escaped, two-space indents.
		p.buf.Reset()
		if p.n == 0 {
			p.buf.WriteString("[\n  ")
		} else {
			p.buf.WriteString(",\n  ")
		}
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b)
		if err := json.Indent(&p.buf, esc.Bytes(), "  ", "  "); err != nil {
			return err
		}
		_, err = p.w.Write(p.buf.Bytes())
		p.n++
		return err
	case p.o.long:
		p.n++
		_, err := fmt.Fprintln(p.w, ad.MarshalOld())
		return err
	}
	if p.t == nil {
		p.t = p.newTable(p.w)
	}
	p.t.row(ad)
	p.n++
	return nil
}

// finish ends the output: closes the JSON array or prints the table.
func (p *printer) finish() error {
	switch {
	case p.o.json && p.n == 0:
		_, err := io.WriteString(p.w, "[]\n")
		return err
	case p.o.json:
		_, err := io.WriteString(p.w, "\n]\n")
		return err
	case p.o.long:
		return nil
	}
	if p.t == nil {
		p.t = p.newTable(p.w)
	}
	p.t.flush()
	return nil
}

func runQ(args []string, _ io.Reader, stdout io.Writer) error {
	return queryJobs("q", args, stdout, wire.ScheddClient.Query)
}

func runHistory(args []string, _ io.Reader, stdout io.Writer) error {
	return queryJobs("history", args, stdout, wire.ScheddClient.History)
}

// jobQuery is the Query or the History call: both stream job ads.
type jobQuery func(wire.ScheddClient, context.Context, *wire.JobQueryRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[wire.JobQueryReply], error)

// receive passes each ad of a Query or History stream to fn, in order.
func receive(stream grpc.ServerStreamingClient[wire.JobQueryReply], fn func(text string) error) error {
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for _, text := range m.Ads {
			if err := fn(text); err != nil {
				return err
			}
		}
	}
}

func queryJobs(name string, args []string, stdout io.Writer, call jobQuery) error {
	args, formats, err := takeFormats(args)
	if err != nil {
		return err
	}
	args, afOpts, af := takeAutoformat(args)
	tf := newToolFlags(name)
	var o output
	o.flags(tf, "job")
	constraint := tf.fs.String("constraint", "", "a ClassAd expression the jobs must satisfy")
	limit := tf.fs.Int("limit", 0, "print at most this many jobs")
	tf.fs.Bool("af", false, "autoformat: print the values of the attributes named after the options, one job per line (-af:jhtlngVr, for options)")
	var analyze, nobatch, hold, holdCodes, running, idle, totals, allUsers, currentRun, cpuTime, global, dag bool
	if name == "q" {
		tf.fs.BoolVar(&dag, "dag", false, "one line per job, DAG node jobs under their DAG's job, named by their node")
		tf.fs.BoolVar(&analyze, "better-analyze", false, "explain why the jobs do or do not match the pool's machines")
		tf.fs.BoolVar(&nobatch, "nobatch", false, "one line per job rather than per batch")
		tf.fs.Bool("batch", true, "one line per batch (the default)")
		tf.fs.BoolVar(&hold, "hold", false, "only held jobs, with why they are held")
		tf.fs.BoolVar(&running, "run", false, "only running jobs, with where they run")
		tf.fs.BoolVar(&idle, "idle", false, "only idle jobs, one line each")
		tf.fs.BoolVar(&holdCodes, "hold-codes", false, "held jobs, one line per hold code and subcode")
		tf.fs.BoolVar(&currentRun, "currentrun", false, "RUN_TIME of the current run only")
		tf.fs.BoolVar(&cpuTime, "cputime", false, "CPU_TIME, the job's remote CPU seconds, for RUN_TIME (one line per job)")
		tf.fs.BoolVar(&totals, "totals", false, "only the summary line")
		tf.fs.BoolVar(&allUsers, "allusers", false, "the jobs of all users (default: the caller's, unless job ids or owners are given)")
		tf.fs.BoolVar(&global, "global", false, "the jobs of every agent whose queue is in the database this pool's agent keeps its own in (QUEUE_STORE = postgres)")
		tf.refuse("refused: "+localAgent, "submitter=", "name=")
	} else {
		tf.refuse("refused: "+localAgent, "global", "submitter=", "name=")
	}
	tf.refuse("not yet: use -json or -long", "xml")
	tf.refuse("not yet: use -af or -format", "print-format=")
	tf.refuse("not yet", "jobads=", "userlog=", "factory", "jobset", "autocluster", "grid", "io", "expert", "unmatchable", "machine=", "mconstraint=", "slotads=", "userprios=", "nouserprios", "reverse-analyze", "verbose")
	tf.accept("Harrier streams results and never truncates columns; RUN_TIME is cumulative", "stream-results", "wide", "cumulative-time")
	if name == "q" {
		tf.fs.BoolVar(&analyze, "analyze", false, "same as -better-analyze")
	}
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// condor_q -af takes attribute names (or expressions) after it; other
	// tools' arguments are job ids and, for q, owner names.
	ids, rest := splitIDs(tf.fs.Args())
	var f adPrinter
	switch {
	case af && len(formats) > 0:
		return usagef("-af and -format may not be used together")
	case af:
		if f, err = newAutoformatter(stdout, afOpts, rest, true); err != nil {
			return err
		}
		rest = nil
	case len(formats) > 0:
		if f, err = newFormatter(stdout, formats); err != nil {
			return err
		}
	}
	if len(rest) > 0 && name != "q" {
		return usagef("bad job id %q: want cluster or cluster.proc", rest[0])
	}
	query := &wire.JobQueryRequest{Ids: ids, Constraint: *constraint, Limit: int32(*limit), Global: global}
	if name == "q" {
		status := map[bool]int{true: 5}[hold]
		switch {
		case running:
			status = 2
		case idle:
			status, nobatch = 1, true
		case holdCodes:
			status = 5
		}
		nobatch = nobatch || cpuTime
		me, err := tf.me()
		if err != nil {
			return err
		}
		if query.Constraint, err = jobSelection(*constraint, rest, allUsers, len(ids) > 0, status, me); err != nil {
			return err
		}
	}
	stream, err := call(client, ctx, query)
	if err != nil {
		return rpcError(name, err)
	}
	var each func(string) error
	var done func() error
	switch {
	case f != nil:
		each, done = f.add, f.finish
	case analyze:
		var texts []string
		each = func(text string) error { texts = append(texts, text); return nil }
		done = func() error { return betterAnalyze(ctx, stdout, client, texts) }
	default:
		times := runTimes{current: currentRun, cpu: cpuTime}
		newTable := func(w io.Writer) table { return newJobTable(w, name == "history", times) }
		switch {
		case name != "q":
		case totals:
			newTable = func(w io.Writer) table { return &totalsTable{w: w} }
		case hold:
			newTable = func(w io.Writer) table { return newHoldTable(w) }
		case holdCodes:
			newTable = func(w io.Writer) table { return newHoldCodesTable(w) }
		case running:
			newTable = func(w io.Writer) table { return newRunTable(w, times) }
		case dag:
			newTable = func(w io.Writer) table { return newDAGTable(w, times) }
		case nobatch:
		default:
			newTable = func(w io.Writer) table { return newBatchTable(w) }
		}
		p := o.printer(stdout, newTable)
		each, done = p.add, p.finish
		if global && !o.json && !o.long {
			each, done = perAgent(stdout, func() *printer { return o.printer(stdout, newTable) })
		}
	}
	if err := receive(stream, each); err != nil {
		return rpcError(name, err)
	}
	return done()
}

// perAgent prints the ads of a -global query, which come agent by agent,
// as condor_q -global does: a table of each agent's jobs under a line
// naming the agent (its jobs' GlobalJobId says which), and "All queues are
// empty" if there are none.
func perAgent(w io.Writer, newPrinter func() *printer) (each func(string) error, done func() error) {
	var p *printer
	var agent string
	each = func(text string) error {
		ad, err := classad.Parse(text)
		if err != nil {
			return fmt.Errorf("bad ad from the pool: %w", err)
		}
		gid, _ := ad.EvalString("GlobalJobId")
		name, _, _ := strings.Cut(gid, "#")
		if p == nil || name != agent {
			if p != nil {
				if err := p.finish(); err != nil {
					return err
				}
			}
			p, agent = newPrinter(), name
			fmt.Fprintf(w, "\n-- Schedd: %s\n", name)
		}
		return p.add(text)
	}
	done = func() error {
		if p == nil {
			_, err := fmt.Fprintln(w, "All queues are empty")
			return err
		}
		return p.finish()
	}
	return each, done
}

// splitIDs separates job ids ("12", "12.3") from other arguments.
func splitIDs(args []string) (ids, rest []string) {
	for _, a := range args {
		if strings.Trim(a, "0123456789.") == "" && a != "" && a[0] != '.' {
			ids = append(ids, a)
		} else {
			rest = append(rest, a)
		}
	}
	return ids, rest
}

// jobTable prints jobs the way condor_q and condor_history do.
type jobTable struct {
	w       io.Writer
	tw      *tabwriter.Writer
	history bool
	times   runTimes
	counts  jobCounts
	now     int64
}

func newJobTable(w io.Writer, history bool, times runTimes) *jobTable {
	t := &jobTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0), history: history, times: times, now: time.Now().Unix()}
	if history {
		fmt.Fprintf(t.tw, " ID\tOWNER\tSUBMITTED\t%s\tST\tCOMPLETED\tCMD\n", times.head())
	} else {
		fmt.Fprintf(t.tw, " ID\tOWNER\tSUBMITTED\t%s\tST\tPRI\tSIZE\tCMD\n", times.head())
	}
	return t
}

func (t *jobTable) row(ad *classad.ClassAd) {
	owner, _ := ad.EvalString("Owner")
	t.rowAs(ad, owner)
}

// rowAs prints ad's line with who in the OWNER column.
func (t *jobTable) rowAs(ad *classad.ClassAd, who string) {
	owner := who
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	qdate, _ := ad.EvalInt("QDate")
	st, _ := ad.EvalInt("JobStatus")
	t.counts.add(st)
	cmd, _ := ad.EvalString("Cmd")
	cmd = filepath.Base(cmd)
	if a, _ := ad.EvalString("Arguments"); a != "" {
		cmd += " " + a
	}
	run := t.times.of(ad, t.now)
	if t.history {
		done, _ := ad.EvalInt("CompletionDate")
		if done == 0 {
			done, _ = ad.EvalInt("EnteredCurrentStatus")
		}
		fmt.Fprintf(t.tw, " %d.%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c, p, owner, shortTime(qdate), run, statusLetter(st), shortTime(done), cmd)
		return
	}
	prio, _ := ad.EvalInt("JobPrio")
	size, _ := ad.EvalInt("ImageSize")
	fmt.Fprintf(t.tw, " %d.%d\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\n", c, p, owner, shortTime(qdate), run, statusLetter(st), prio, float64(size)/1024, cmd)
}

func (t *jobTable) flush() {
	t.tw.Flush()
	if !t.history {
		fmt.Fprintf(t.w, "\n%s\n", t.counts.String())
	}
}

// runTimes says what a table's time column shows: by default the
// wall-clock time of all the job's runs, the current one included; with
// current (-currentrun) that of its current run, or of its last while it
// waits; with cpu (-cputime) its remote CPU time, as CPU_TIME.
type runTimes struct{ current, cpu bool }

func (r runTimes) head() string {
	if r.cpu {
		return "CPU_TIME"
	}
	return "RUN_TIME"
}

func (r runTimes) of(ad *classad.ClassAd, now int64) string {
	if r.cpu {
		user, _ := ad.EvalReal("RemoteUserCpu")
		sys, _ := ad.EvalReal("RemoteSysCpu")
		return duration(int64(user + sys))
	}
	var secs int64
	if r.current {
		last, _ := ad.EvalReal("LastRemoteWallClockTime")
		secs = int64(last)
	} else {
		total, _ := ad.EvalReal("RemoteWallClockTime")
		secs = int64(total)
	}
	if st, _ := ad.EvalInt("JobStatus"); st == 2 {
		if start, ok := ad.EvalInt("JobCurrentStartDate"); ok {
			if r.current {
				secs = 0
			}
			secs += now - start
		}
	}
	return duration(secs)
}

// duration prints seconds as condor_q does: D+HH:MM:SS.
func duration(secs int64) string {
	if secs < 0 {
		secs = 0
	}
	return fmt.Sprintf("%d+%02d:%02d:%02d", secs/86400, secs%86400/3600, secs%3600/60, secs%60)
}

func shortTime(unix int64) string {
	if unix == 0 {
		return "???"
	}
	return time.Unix(unix, 0).Format("1/2 15:04")
}

func statusLetter(s int64) string {
	if l, ok := map[int64]string{1: "I", 2: "R", 3: "X", 4: "C", 5: "H", 6: ">", 7: "S"}[s]; ok {
		return l
	}
	return "?"
}

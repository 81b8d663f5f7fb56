package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// output says how ads are printed: a table, -long (old ClassAd syntax, one
// blank line between ads) or -json (a JSON array, as condor_q -json).
type output struct {
	json, long bool
}

func (o output) print(w io.Writer, texts []string, table func(io.Writer, []*classad.ClassAd)) error {
	ads := make([]*classad.ClassAd, 0, len(texts))
	for _, t := range texts {
		ad, err := classad.Parse(t)
		if err != nil {
			return fmt.Errorf("bad ad from the pool: %w", err)
		}
		ads = append(ads, ad)
	}
	switch {
	case o.json:
		raw := make([]json.RawMessage, len(ads))
		for i, ad := range ads {
			b, err := ad.MarshalJSON()
			if err != nil {
				return err
			}
			raw[i] = b
		}
		b, err := json.MarshalIndent(raw, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case o.long:
		for _, ad := range ads {
			fmt.Fprintln(w, ad.MarshalOld())
		}
		return nil
	}
	table(w, ads)
	return nil
}

func runQ(args []string, _ io.Reader, stdout io.Writer) error {
	return queryJobs("q", args, stdout, func(c wire.ScheddClient, ctx context.Context, r *wire.JobQueryRequest) (*wire.JobQueryReply, error) {
		return c.Query(ctx, r)
	})
}

func runHistory(args []string, _ io.Reader, stdout io.Writer) error {
	return queryJobs("history", args, stdout, func(c wire.ScheddClient, ctx context.Context, r *wire.JobQueryRequest) (*wire.JobQueryReply, error) {
		return c.History(ctx, r)
	})
}

func queryJobs(name string, args []string, stdout io.Writer, call func(wire.ScheddClient, context.Context, *wire.JobQueryRequest) (*wire.JobQueryReply, error)) error {
	tf := newToolFlags(name)
	var o output
	tf.fs.BoolVar(&o.json, "json", false, "print the job ads as JSON")
	tf.fs.BoolVar(&o.long, "long", false, "print the whole job ads")
	tf.fs.BoolVar(&o.long, "l", false, "same as -long")
	constraint := tf.fs.String("constraint", "", "a ClassAd expression the jobs must satisfy")
	limit := tf.fs.Int("limit", 0, "print at most this many jobs")
	af := tf.fs.Bool("af", false, "autoformat: print the values of the attributes named after the options, one job per line")
	analyze := false
	if name == "q" {
		tf.fs.BoolVar(&analyze, "better-analyze", false, "explain why the jobs do or do not match the pool's machines")
	}
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := tf.fs.Args()
	var attrs []string
	if *af {
		// condor_q -af takes attribute names (or expressions) after it;
		// job ids are the arguments that look like ids.
		ids, attrs = splitIDs(ids)
		if len(attrs) == 0 {
			return usagef("-af wants attribute names")
		}
	}
	reply, err := call(client, ctx, &wire.JobQueryRequest{Ids: ids, Constraint: *constraint, Limit: int32(*limit)})
	if err != nil {
		return rpcError(name, err)
	}
	if *af {
		return autoformat(stdout, reply.Ads, attrs)
	}
	if analyze {
		return betterAnalyze(ctx, stdout, client, reply.Ads)
	}
	return o.print(stdout, reply.Ads, func(w io.Writer, ads []*classad.ClassAd) { jobTable(w, ads, name == "history") })
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

// autoformat prints, for each ad, the values of exprs separated by spaces,
// strings without quotes, as condor_q -af does.
func autoformat(w io.Writer, texts []string, exprs []string) error {
	parsed := make([]classad.Expr, len(exprs))
	for i, src := range exprs {
		e, err := classad.ParseExpr(src)
		if err != nil {
			return usagef("-af %s: %v", src, err)
		}
		parsed[i] = e
	}
	for _, t := range texts {
		ad, err := classad.Parse(t)
		if err != nil {
			return fmt.Errorf("bad ad from the pool: %w", err)
		}
		for i, e := range parsed {
			if i > 0 {
				fmt.Fprint(w, " ")
			}
			v := ad.EvalExpr(e, nil)
			if s, ok := v.StringValue(); ok {
				fmt.Fprint(w, s)
			} else {
				fmt.Fprint(w, v.String())
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

// jobTable prints jobs the way condor_q and condor_history do.
func jobTable(w io.Writer, ads []*classad.ClassAd, history bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	if history {
		fmt.Fprintln(tw, " ID\tOWNER\tSUBMITTED\tRUN_TIME\tST\tCOMPLETED\tCMD")
	} else {
		fmt.Fprintln(tw, " ID\tOWNER\tSUBMITTED\tRUN_TIME\tST\tPRI\tSIZE\tCMD")
	}
	counts := map[int64]int{}
	now := time.Now().Unix()
	for _, ad := range ads {
		c, _ := ad.EvalInt("ClusterId")
		p, _ := ad.EvalInt("ProcId")
		owner, _ := ad.EvalString("Owner")
		qdate, _ := ad.EvalInt("QDate")
		st, _ := ad.EvalInt("JobStatus")
		counts[st]++
		cmd, _ := ad.EvalString("Cmd")
		cmd = filepath.Base(cmd)
		if a, _ := ad.EvalString("Arguments"); a != "" {
			cmd += " " + a
		}
		run := runTime(ad, now)
		if history {
			done, _ := ad.EvalInt("CompletionDate")
			if done == 0 {
				done, _ = ad.EvalInt("EnteredCurrentStatus")
			}
			fmt.Fprintf(tw, " %d.%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c, p, owner, shortTime(qdate), run, statusLetter(st), shortTime(done), cmd)
			continue
		}
		prio, _ := ad.EvalInt("JobPrio")
		size, _ := ad.EvalInt("ImageSize")
		fmt.Fprintf(tw, " %d.%d\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\n", c, p, owner, shortTime(qdate), run, statusLetter(st), prio, float64(size)/1024, cmd)
	}
	tw.Flush()
	if !history {
		fmt.Fprintf(w, "\n%d jobs; %d completed, %d removed, %d idle, %d running, %d held, %d suspended\n",
			len(ads), counts[4], counts[3], counts[1], counts[2], counts[5], counts[7])
	}
}

func runTime(ad *classad.ClassAd, now int64) string {
	secs, _ := ad.EvalInt("RemoteWallClockTime")
	if st, _ := ad.EvalInt("JobStatus"); st == 2 {
		if start, ok := ad.EvalInt("JobCurrentStartDate"); ok {
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

func runStatus(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("status")
	var o output
	tf.fs.BoolVar(&o.json, "json", false, "print the machine ads as JSON")
	tf.fs.BoolVar(&o.long, "long", false, "print the whole machine ads")
	tf.fs.BoolVar(&o.long, "l", false, "same as -long")
	constraint := tf.fs.String("constraint", "", "a ClassAd expression the machines must satisfy")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: "Machine", Constraint: *constraint})
	if err != nil {
		return rpcError("status", err)
	}
	return o.print(stdout, reply.Ads, machineTable)
}

// machineTable prints slots the way condor_status does.
func machineTable(w io.Writer, ads []*classad.ClassAd) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "Name\tOpSys\tArch\tState\tActivity\tLoadAv\tMem\tActvtyTime")
	now := time.Now().Unix()
	states := map[string]int{}
	for _, ad := range ads {
		name, _ := ad.EvalString("Name")
		opsys, _ := ad.EvalString("OpSys")
		arch, _ := ad.EvalString("Arch")
		state, _ := ad.EvalString("State")
		act, _ := ad.EvalString("Activity")
		load, _ := ad.EvalReal("LoadAvg")
		mem, _ := ad.EvalInt("Memory")
		since, _ := ad.EvalInt("EnteredCurrentActivity")
		states[state]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3f\t%d\t%s\n", name, opsys, arch, state, act, load, mem, duration(now-since))
	}
	tw.Flush()
	var parts []string
	for _, s := range []string{"Owner", "Claimed", "Unclaimed", "Matched", "Preempting"} {
		parts = append(parts, fmt.Sprintf("%s %d", s, states[s]))
	}
	fmt.Fprintf(w, "\nTotal %d: %s\n", len(ads), strings.Join(parts, ", "))
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/wire"
)

// runStatus shows the pool's slots, as condor_status does: one line per
// slot and a summary by platform and state; -compact rolls a machine's
// slots into one line, -total prints only the summary, -avail selects the
// slots ready for a job, -draining the draining machines with why, -af
// prints chosen values.
func runStatus(args []string, _ io.Reader, stdout io.Writer) error {
	args, formats, err := takeFormats(args)
	if err != nil {
		return err
	}
	args, afOpts, af := takeAutoformat(args)
	tf := newToolFlags("status")
	var o output
	o.flags(tf, "machine")
	var sorts stringList
	tf.fs.Var(&sorts, "sort", "order the slots by this expression, ascending (repeatable: the first is the primary key)")
	constraint := tf.fs.String("constraint", "", "a ClassAd expression the machines must satisfy")
	tf.fs.Bool("af", false, "autoformat: print the values of the expressions given as arguments, one slot per line (-af:ht,lngVr for options)")
	compact := tf.fs.Bool("compact", false, "one line per machine rather than per slot")
	total := tf.fs.Bool("totals", false, "only the summary by platform and state")
	tf.fs.BoolVar(total, "total", false, "same as -totals")
	avail := tf.fs.Bool("avail", false, "only slots that would start a job now (Unclaimed and Idle)")
	claimed := tf.fs.Bool("claimed", false, "only claimed slots")
	running := tf.fs.Bool("run", false, "slots running jobs, with whose job they run")
	gpus := tf.fs.Bool("gpus", false, "slots of machines with GPUs, with their GPUs")
	state := tf.fs.Bool("state", false, "the slots' states, activities and keyboard idle times")
	draining := tf.fs.Bool("draining", false, "the draining machines, one line each, with since when and why")
	schedd := tf.fs.Bool("schedd", false, "the agents' ads (HTCondor's schedds), with their job counts")
	daemons := tf.fs.Bool("daemons", false, "the daemons' own ads: each host's master, the negotiator, the agents")
	masters := tf.fs.Bool("master", false, "the masters' ads (DaemonMaster)")
	negotiator := tf.fs.Bool("negotiator", false, "the negotiator's ad")
	license := tf.fs.Bool("license", false, "the software licenses the matchmaker offers to gangs (LICENSE_FILE), with their seats in use")
	limit := tf.fs.Int("limit", 0, "print at most this many slots")
	tf.refuse("not yet: harrier status shows the slots, and with -schedd, -master, -negotiator or -daemons the daemons", "absent", "any", "cod", "collector", "defrag", "grid", "java",
		"server", "broken", "lvm", "storage", "submitters", "vm", "offline", "subsystem=")
	tf.refuse("not yet: use -json or -long", "xml")
	tf.refuse("not yet: use -af or -format", "print-format=")
	tf.refuse("refused: "+localAgent, "direct=", "snapshot", "statistics=")
	tf.refuse("not yet", "ads=", "annex=", "target=", "merge=", "expert", "diagnose")
	tf.accept("harrier status shows the startds' slots", "startd")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	// Without -af the arguments are machine or slot names, as
	// condor_status takes them.
	var f adPrinter
	var names []string
	switch {
	case af && len(formats) > 0:
		return usagef("-af and -format may not be used together")
	case af:
		if f, err = newAutoformatter(stdout, afOpts, tf.fs.Args(), false); err != nil {
			return err
		}
	case len(formats) > 0:
		if f, err = newFormatter(stdout, formats); err != nil {
			return err
		}
	}
	if !af {
		for _, n := range tf.fs.Args() {
			q := classad.String(n).String()
			names = append(names, "Name == "+q+" || Machine == "+q)
		}
	}
	cons := joinConstraints(*constraint, strings.Join(names, " || "))
	if *avail {
		cons = joinConstraints(`State == "Unclaimed" && Activity == "Idle"`, cons)
	}
	if *gpus {
		cons = joinConstraints(gpusConstraint, cons)
	}
	if *draining {
		cons = joinConstraints("Draining =?= true", cons)
	}
	if *claimed || *running {
		cons = joinConstraints(`State == "Claimed"`, cons)
	}
	typ := "Machine"
	switch {
	case *schedd:
		typ = "Scheduler"
	case *masters:
		typ = typeDaemonMaster
	case *negotiator:
		typ = "Negotiator"
	case *license:
		typ = matchmaker.TypeLicense
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply := &wire.QueryReply{}
	if *daemons {
		reply.Ads, err = daemonAds(ctx, client, cons)
	} else {
		reply, err = client.QueryPool(ctx, &wire.QueryRequest{Type: typ, Constraint: cons})
	}
	if err != nil {
		return rpcError("status", err)
	}
	if len(sorts) > 0 {
		if reply.Ads, err = sortAds(reply.Ads, sorts); err != nil {
			return err
		}
	}
	if *limit > 0 && len(reply.Ads) > *limit {
		reply.Ads = reply.Ads[:*limit]
	}
	if f != nil {
		for _, text := range reply.Ads {
			if err := f.add(text); err != nil {
				return err
			}
		}
		return f.finish()
	}
	newTable := func(w io.Writer) table { return newMachineTable(w) }
	switch {
	case *daemons || *masters || *negotiator:
		newTable = newDaemonsTable
	case *schedd:
		newTable = func(w io.Writer) table { return newScheddTable(w) }
	case *license:
		newTable = func(w io.Writer) table { return newLicenseTable(w) }
	case *total:
		newTable = func(w io.Writer) table { return &summaryTable{w: w} }
	case *running:
		newTable = func(w io.Writer) table { return newColumnsTable(w, runColumns()) }
	case *state:
		newTable = func(w io.Writer) table { return newColumnsTable(w, stateColumns()) }
	case *gpus:
		newTable = func(w io.Writer) table { return newColumnsTable(w, gpuColumns()) }
	case *compact:
		newTable = func(w io.Writer) table { return newCompactTable(w) }
	case *draining:
		newTable = func(w io.Writer) table { return newDrainingTable(w) }
	}
	p := o.printer(stdout, newTable)
	for _, text := range reply.Ads {
		if err := p.add(text); err != nil {
			return err
		}
	}
	return p.finish()
}

// joinConstraints is the conjunction of the non-empty constraints.
func joinConstraints(cs ...string) string {
	var parts []string
	for _, c := range cs {
		if strings.TrimSpace(c) != "" {
			parts = append(parts, "("+c+")")
		}
	}
	return strings.Join(parts, " && ")
}

// machineTable prints slots the way condor_status does.
type machineTable struct {
	tw      *tabwriter.Writer
	summary summaryTable
	now     int64
}

func newMachineTable(w io.Writer) *machineTable {
	t := &machineTable{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0), summary: summaryTable{w: w}, now: time.Now().Unix()}
	fmt.Fprintln(t.tw, "Name\tOpSys\tArch\tState\tActivity\tLoadAv\tMem\tActvtyTime")
	return t
}

func (t *machineTable) row(ad *classad.ClassAd) {
	name, _ := ad.EvalString("Name")
	opsys, _ := ad.EvalString("OpSys")
	arch, _ := ad.EvalString("Arch")
	state, _ := ad.EvalString("State")
	act, _ := ad.EvalString("Activity")
	load, _ := ad.EvalReal("LoadAvg")
	mem, _ := ad.EvalInt("Memory")
	since, _ := ad.EvalInt("EnteredCurrentActivity")
	t.summary.row(ad)
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\t%.3f\t%d\t%s\n", name, opsys, arch, state, act, load, mem, duration(t.now-since))
}

func (t *machineTable) flush() {
	t.tw.Flush()
	fmt.Fprintln(t.summary.w)
	t.summary.flush()
}

// summaryStates are the columns of condor_status's summary, in its order.
var summaryStates = []string{"Owner", "Claimed", "Unclaimed", "Matched", "Preempting", "Drained"}

// summaryTable counts slots by platform and state, and prints the counts
// as condor_status does after its table (and alone with -total).
type summaryTable struct {
	w         io.Writer
	platforms []string
	counts    map[string][]int // by platform, then Total and summaryStates
}

func (t *summaryTable) row(ad *classad.ClassAd) {
	arch, _ := ad.EvalString("Arch")
	opsys, _ := ad.EvalString("OpSys")
	state, _ := ad.EvalString("State")
	platform := arch + "/" + opsys
	if t.counts == nil {
		t.counts = map[string][]int{}
	}
	c := t.counts[platform]
	if c == nil {
		c = make([]int, 1+len(summaryStates))
		t.counts[platform] = c
		t.platforms = append(t.platforms, platform)
	}
	c[0]++
	if i := slices.Index(summaryStates, state); i >= 0 {
		c[1+i]++
	}
}

func (t *summaryTable) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 1, ' ', tabwriter.AlignRight)
	line := func(name string, c []int) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, n := range c {
			fmt.Fprintf(tw, "%d\t", n)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "\tTotal\t%s\t\n", strings.Join(summaryStates, "\t"))
	sum := make([]int, 1+len(summaryStates))
	for _, p := range t.platforms {
		line(p, t.counts[p])
		for i, n := range t.counts[p] {
			sum[i] += n
		}
	}
	line("Total", sum)
	tw.Flush()
}

// compactTable prints one line per machine, its slots rolled up, as
// condor_status -compact does.
type compactTable struct {
	w        io.Writer
	machines []string
	index    map[string]*machineRollup
	summary  summaryTable
}

type machineRollup struct {
	platform          string
	slots             int
	cpus, memory      int64 // of the machine
	freeCpus, freeMem int64 // of its unclaimed slots
	load              float64
	states            []string // state letters of each slot, "Ui"
}

func newCompactTable(w io.Writer) *compactTable {
	return &compactTable{w: w, index: map[string]*machineRollup{}, summary: summaryTable{w: w}}
}

func (t *compactTable) row(ad *classad.ClassAd) {
	t.summary.row(ad)
	name, _ := ad.EvalString("Machine")
	if name == "" {
		name, _ = ad.EvalString("Name")
	}
	m := t.index[name]
	if m == nil {
		arch, _ := ad.EvalString("Arch")
		opsys, _ := ad.EvalString("OpSys")
		m = &machineRollup{platform: arch + "/" + opsys}
		t.index[name] = m
		t.machines = append(t.machines, name)
	}
	m.slots++
	cpus, _ := ad.EvalInt("Cpus")
	mem, _ := ad.EvalInt("Memory")
	if n, ok := ad.EvalInt("TotalCpus"); ok {
		m.cpus = n
	} else {
		m.cpus += cpus
	}
	if n, ok := ad.EvalInt("TotalMemory"); ok {
		m.memory = n
	} else {
		m.memory += mem
	}
	state, _ := ad.EvalString("State")
	act, _ := ad.EvalString("Activity")
	if state == "Unclaimed" {
		m.freeCpus += cpus
		m.freeMem += mem
	}
	if l, ok := ad.EvalReal("TotalLoadAvg"); ok {
		m.load = l
	} else if l, ok := ad.EvalReal("LoadAvg"); ok {
		m.load += l
	}
	m.states = append(m.states, stateLetters(state, act))
}

// stateLetters abbreviates a slot's state and activity as condor_status
// -compact does: "Ui" for Unclaimed Idle, "Cb" for Claimed Busy.
func stateLetters(state, activity string) string {
	s, a := "?", "?"
	if state != "" {
		s = state[:1]
	}
	if activity != "" {
		a = strings.ToLower(activity[:1])
	}
	return s + a
}

func (t *compactTable) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "Machine\tPlatform\tSlots\tCpus\tTotalGb\tFreCpu\tFreeGb\tCpuLoad\tST")
	for _, name := range t.machines {
		m := t.index[name]
		st := m.states[0]
		for _, s := range m.states[1:] {
			if s != st {
				st = "**" // slots in different states, as condor_status says it
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%d\t%.2f\t%.2f\t%s\n", name, m.platform, m.slots, m.cpus,
			float64(m.memory)/1024, m.freeCpus, float64(m.freeMem)/1024, m.load, st)
	}
	tw.Flush()
	fmt.Fprintln(t.w)
	t.summary.flush()
}

// sortAds orders ads by the values of exprs, as condor_status -sort does:
// ascending, numbers by value, strings without regard to case, other
// values (undefined) last.
func sortAds(texts []string, srcs []string) ([]string, error) {
	exprs := make([]classad.Expr, len(srcs))
	for i, src := range srcs {
		e, err := classad.ParseExpr(src)
		if err != nil {
			return nil, usagef("-sort %s: %v", src, err)
		}
		exprs[i] = e
	}
	type keyed struct {
		text string
		keys []classad.Value
	}
	ads := make([]keyed, len(texts))
	for i, text := range texts {
		ad, err := classad.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("bad ad from the pool: %w", err)
		}
		ads[i] = keyed{text: text, keys: make([]classad.Value, len(exprs))}
		for j, e := range exprs {
			ads[i].keys[j] = ad.EvalExpr(e, nil)
		}
	}
	slices.SortStableFunc(ads, func(a, b keyed) int {
		for j := range exprs {
			if c := compareValues(a.keys[j], b.keys[j]); c != 0 {
				return c
			}
		}
		return 0
	})
	out := make([]string, len(ads))
	for i, a := range ads {
		out[i] = a.text
	}
	return out, nil
}

// compareValues orders numbers (false and true as 0 and 1) before strings
// before anything else.
func compareValues(a, b classad.Value) int {
	number := func(v classad.Value) (float64, bool) {
		if b, ok := v.BoolValue(); ok {
			if b {
				return 1, true
			}
			return 0, true
		}
		return v.RealValue()
	}
	rank := func(v classad.Value) int {
		if _, ok := number(v); ok {
			return 0
		}
		if _, ok := v.StringValue(); ok {
			return 1
		}
		return 2
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	if x, ok := number(a); ok {
		y, _ := number(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	x, _ := a.StringValue()
	y, _ := b.StringValue()
	return strings.Compare(strings.ToLower(x), strings.ToLower(y))
}

// A column is a heading and how to print its value from a slot's ad.
type column struct {
	head  string
	value func(ad *classad.ClassAd, now int64) string
}

func stringColumn(head, attr string) column {
	return column{head, func(ad *classad.ClassAd, _ int64) string { s, _ := ad.EvalString(attr); return s }}
}

func intColumn(head, attr string) column {
	return column{head, func(ad *classad.ClassAd, _ int64) string { n, _ := ad.EvalInt(attr); return fmt.Sprint(n) }}
}

// sinceColumn prints the time since the moment attr holds.
func sinceColumn(head, attr string) column {
	return column{head, func(ad *classad.ClassAd, now int64) string { t, _ := ad.EvalInt(attr); return duration(now - t) }}
}

func loadColumn() column {
	return column{"LoadAv", func(ad *classad.ClassAd, _ int64) string {
		l, _ := ad.EvalReal("LoadAvg")
		return fmt.Sprintf("%.3f", l)
	}}
}

// runColumns are condor_status -run's: whose job each claimed slot runs.
func runColumns() []column {
	return []column{stringColumn("Name", "Name"), stringColumn("OpSys", "OpSys"), stringColumn("Arch", "Arch"), loadColumn(),
		stringColumn("RemoteUser", "RemoteOwner"), stringColumn("ClientMachine", "ClaimedBy"), stringColumn("JobId", "JobId")}
}

// stateColumns are condor_status -state's.
func stateColumns() []column {
	return []column{stringColumn("Name", "Name"), intColumn("Cpu", "Cpus"), intColumn("Mem", "Memory"), loadColumn(),
		{"KbdIdle", func(ad *classad.ClassAd, _ int64) string { n, _ := ad.EvalInt("KeyboardIdle"); return duration(n) }},
		stringColumn("State", "State"), sinceColumn("StateTime", "EnteredCurrentState"),
		stringColumn("Activ", "Activity"), sinceColumn("ActvtyTime", "EnteredCurrentActivity")}
}

// columnsTable prints slots in the given columns, then the summary.
type columnsTable struct {
	tw      *tabwriter.Writer
	cols    []column
	summary summaryTable
	now     int64
}

func newColumnsTable(w io.Writer, cols []column) *columnsTable {
	t := &columnsTable{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0), cols: cols, summary: summaryTable{w: w}, now: time.Now().Unix()}
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = c.head
	}
	fmt.Fprintln(t.tw, strings.Join(heads, "\t"))
	return t
}

func (t *columnsTable) row(ad *classad.ClassAd) {
	t.summary.row(ad)
	vals := make([]string, len(t.cols))
	for i, c := range t.cols {
		vals[i] = c.value(ad, t.now)
	}
	fmt.Fprintln(t.tw, strings.Join(vals, "\t"))
}

func (t *columnsTable) flush() {
	t.tw.Flush()
	fmt.Fprintln(t.summary.w)
	t.summary.flush()
}

// licenseTable prints the license ads: each license's seats and how
// many are held by running gangs or matched to them.
type licenseTable struct{ tw *tabwriter.Writer }

func newLicenseTable(w io.Writer) *licenseTable {
	t := &licenseTable{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)}
	fmt.Fprintln(t.tw, "Name\tSeats\tInUse")
	return t
}

func (t *licenseTable) row(ad *classad.ClassAd) {
	name, _ := ad.EvalString("Name")
	seats, ok := ad.EvalInt(matchmaker.AttrSeats)
	if !ok {
		seats = 1
	}
	used, _ := ad.EvalInt(matchmaker.AttrSeatsInUse)
	fmt.Fprintf(t.tw, "%s\t%d\t%d\n", name, seats, used)
}

func (t *licenseTable) flush() { t.tw.Flush() }

// scheddTable prints the agents' ads as condor_status -schedd prints
// schedds: their job counts, and the totals.
type scheddTable struct {
	w                  io.Writer
	tw                 *tabwriter.Writer
	run, idle, held, n int64
}

func newScheddTable(w io.Writer) *scheddTable {
	t := &scheddTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)}
	fmt.Fprintln(t.tw, "Name\tRunningJobs\tIdleJobs\tHeldJobs")
	return t
}

func (t *scheddTable) row(ad *classad.ClassAd) {
	name, _ := ad.EvalString("Name")
	run, _ := ad.EvalInt("TotalRunningJobs")
	idle, _ := ad.EvalInt("TotalIdleJobs")
	held, _ := ad.EvalInt("TotalHeldJobs")
	t.run, t.idle, t.held, t.n = t.run+run, t.idle+idle, t.held+held, t.n+1
	fmt.Fprintf(t.tw, "%s\t%d\t%d\t%d\n", name, run, idle, held)
}

func (t *scheddTable) flush() {
	fmt.Fprintln(t.tw, "\t\t\t")
	fmt.Fprintf(t.tw, "Total\t%d\t%d\t%d\n", t.run, t.idle, t.held)
	t.tw.Flush()
}

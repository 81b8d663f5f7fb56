package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
)

// jobCounts counts jobs by status for the summary line condor_q prints.
type jobCounts struct {
	n  int
	by [8]int // by JobStatus
}

func (c *jobCounts) add(status int64) {
	c.n++
	if status >= 0 && int(status) < len(c.by) {
		c.by[status]++
	}
}

func (c *jobCounts) String() string {
	return fmt.Sprintf("Total for query: %d jobs; %d completed, %d removed, %d idle, %d running, %d held, %d suspended",
		c.n, c.by[4], c.by[3], c.by[1], c.by[2], c.by[5], c.by[7])
}

// totalsTable prints only the summary line (condor_q -totals).
type totalsTable struct {
	w      io.Writer
	counts jobCounts
}

func (t *totalsTable) row(ad *classad.ClassAd) {
	st, _ := ad.EvalInt("JobStatus")
	t.counts.add(st)
}

func (t *totalsTable) flush() { fmt.Fprintln(t.w, t.counts.String()) }

// A batch is condor_q's unit of its default view: the jobs of one owner
// with one JobBatchName, or, without a name, the jobs of one cluster.
type batch struct {
	owner, name string
	submitted   int64
	counts      jobCounts
	clusters    map[int64]*clusterCount
	ids         []int64 // first and last cluster.proc seen, as cluster<<32|proc
}

// clusterCount is what a batch knows of one of its clusters: how many jobs
// were submitted (TotalSubmitProcs) and how many are in the queue.
type clusterCount struct{ total, queued int64 }

// batchTable prints one line per batch, as condor_q does by default.
type batchTable struct {
	w       io.Writer
	batches []*batch
	index   map[string]*batch
	counts  jobCounts
}

func newBatchTable(w io.Writer) *batchTable {
	return &batchTable{w: w, index: map[string]*batch{}}
}

func (t *batchTable) row(ad *classad.ClassAd) {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	owner, _ := ad.EvalString("Owner")
	name, _ := ad.EvalString("JobBatchName")
	if name == "" {
		name = "ID: " + strconv.FormatInt(c, 10)
	}
	key := owner + "\x00" + name
	b := t.index[key]
	if b == nil {
		b = &batch{owner: owner, name: name, clusters: map[int64]*clusterCount{}}
		t.index[key] = b
		t.batches = append(t.batches, b)
	}
	st, _ := ad.EvalInt("JobStatus")
	b.counts.add(st)
	t.counts.add(st)
	if q, _ := ad.EvalInt("QDate"); b.submitted == 0 || q < b.submitted {
		b.submitted = q
	}
	cc := b.clusters[c]
	if cc == nil {
		cc = &clusterCount{}
		b.clusters[c] = cc
	}
	cc.queued++
	if n, ok := ad.EvalInt("TotalSubmitProcs"); ok && n > cc.total {
		cc.total = n
	}
	id := c<<32 | p
	switch {
	case len(b.ids) == 0:
		b.ids = []int64{id, id}
	case id < b.ids[0]:
		b.ids[0] = id
	case id > b.ids[1]:
		b.ids[1] = id
	}
}

func (t *batchTable) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 1, ' ', 0)
	// condor_q shows HOLD only when a job is held, or no job at all.
	hold := t.counts.by[5] > 0 || t.counts.n == 0
	heads := []string{"OWNER", "BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE", "HOLD", "TOTAL", "JOB_IDS"}
	if !hold {
		heads = slices.Delete(heads, 6, 7)
	}
	fmt.Fprintln(tw, strings.Join(heads, "\t"))
	for _, b := range t.batches {
		var total, done int64
		for _, cc := range b.clusters {
			// Jobs that completed and left the queue are done.
			n := max(cc.total, cc.queued)
			total += n
			done += n - cc.queued
		}
		done += int64(b.counts.by[4])
		cols := []string{b.owner, b.name, shortTime(b.submitted), count(done), count(int64(b.counts.by[2])), count(int64(b.counts.by[1]))}
		if hold {
			cols = append(cols, count(int64(b.counts.by[5])))
		}
		cols = append(cols, strconv.FormatInt(total, 10), jobRange(b.ids[0], b.ids[1]))
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(t.w, "\n%s\n", t.counts.String())
}

// count prints a batch count as condor_q does: "_" for none.
func count(n int64) string {
	if n == 0 {
		return "_"
	}
	return strconv.FormatInt(n, 10)
}

// jobRange prints a batch's job ids as condor_q does: "12.0-4" within one
// cluster, "12.0 ... 14.2" across clusters.
func jobRange(first, last int64) string {
	fc, fp, lc, lp := first>>32, first&0xffffffff, last>>32, last&0xffffffff
	switch {
	case first == last:
		return fmt.Sprintf("%d.%d", fc, fp)
	case fc == lc:
		return fmt.Sprintf("%d.%d-%d", fc, fp, lp)
	}
	return fmt.Sprintf("%d.%d ... %d.%d", fc, fp, lc, lp)
}

// holdTable prints held jobs with why they are held (condor_q -hold).
type holdTable struct {
	w      io.Writer
	tw     *tabwriter.Writer
	counts jobCounts
}

func newHoldTable(w io.Writer) *holdTable {
	t := &holdTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)}
	fmt.Fprintln(t.tw, " ID\tOWNER\tHELD_SINCE\tCODE/SUB\tHOLD_REASON")
	return t
}

func (t *holdTable) row(ad *classad.ClassAd) {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	owner, _ := ad.EvalString("Owner")
	since, _ := ad.EvalInt("EnteredCurrentStatus")
	code, _ := ad.EvalInt("HoldReasonCode")
	sub, _ := ad.EvalInt("HoldReasonSubCode")
	reason, _ := ad.EvalString("HoldReason")
	st, _ := ad.EvalInt("JobStatus")
	t.counts.add(st)
	fmt.Fprintf(t.tw, " %d.%d\t%s\t%s\t%d/%d\t%s\n", c, p, owner, shortTime(since), code, sub, reason)
}

func (t *holdTable) flush() {
	t.tw.Flush()
	fmt.Fprintf(t.w, "\n%s\n", t.counts.String())
}

// runTable prints running jobs with where they run (condor_q -run); like
// condor_q it prints no summary.
type runTable struct {
	tw    *tabwriter.Writer
	times runTimes
	now   int64
}

func newRunTable(w io.Writer, times runTimes) *runTable {
	t := &runTable{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0), times: times, now: time.Now().Unix()}
	fmt.Fprintf(t.tw, " ID\tOWNER\tSUBMITTED\t%s\tHOST(S)\n", times.head())
	return t
}

func (t *runTable) row(ad *classad.ClassAd) {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	owner, _ := ad.EvalString("Owner")
	qdate, _ := ad.EvalInt("QDate")
	host, _ := ad.EvalString("RemoteHost")
	fmt.Fprintf(t.tw, " %d.%d\t%s\t%s\t%s\t%s\n", c, p, owner, shortTime(qdate), t.times.of(ad, t.now), host)
}

func (t *runTable) flush() { t.tw.Flush() }

// jobSelection is what condor_q's restriction list and its default make of
// a query's constraint: owner names given on the command line, or by
// default the caller alone (unless -allusers, job ids, or the caller is
// root, the queue's superuser: me is then ""), and the job states -hold
// and -run ask for.
func jobSelection(constraint string, owners []string, allUsers, haveIDs bool, status int, me string) (string, error) {
	if len(owners) == 0 && !allUsers && !haveIDs && me != "" {
		owners = []string{me}
	}
	var parts []string
	if len(owners) > 0 {
		alts := make([]string, len(owners))
		for i, o := range owners {
			alts[i] = "Owner == " + classad.String(o).String()
		}
		parts = append(parts, "("+strings.Join(alts, " || ")+")")
	}
	if status != 0 {
		parts = append(parts, "JobStatus == "+strconv.Itoa(status))
	}
	if strings.TrimSpace(constraint) != "" {
		parts = append(parts, "("+constraint+")")
	}
	return strings.Join(parts, " && "), nil
}

// holdCodesTable prints one line per hold code and subcode, with the first
// such job's owner, time and reason (condor_q -hold-codes).
type holdCodesTable struct {
	w      io.Writer
	codes  []string
	first  map[string]*classad.ClassAd
	count  map[string]int
	counts jobCounts
}

func newHoldCodesTable(w io.Writer) *holdCodesTable {
	return &holdCodesTable{w: w, first: map[string]*classad.ClassAd{}, count: map[string]int{}}
}

func (t *holdCodesTable) row(ad *classad.ClassAd) {
	code, _ := ad.EvalInt("HoldReasonCode")
	sub, _ := ad.EvalInt("HoldReasonSubCode")
	st, _ := ad.EvalInt("JobStatus")
	t.counts.add(st)
	k := fmt.Sprintf("%d/%d", code, sub)
	if t.first[k] == nil {
		t.first[k] = ad
		t.codes = append(t.codes, k)
	}
	t.count[k]++
}

func (t *holdCodesTable) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "OWNER\tCODE/SUB\tCOUNT\tHELD_SINCE\tHOLD_REASON")
	for _, k := range t.codes {
		ad := t.first[k]
		owner, _ := ad.EvalString("Owner")
		since, _ := ad.EvalInt("EnteredCurrentStatus")
		reason, _ := ad.EvalString("HoldReason")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", owner, k, t.count[k], shortTime(since), reason)
	}
	tw.Flush()
	fmt.Fprintf(t.w, "\n%s\n", t.counts.String())
}

// dagTable prints one line per job, as -nobatch does, with the node jobs of
// each DAG under the DAG's own job and named by their node (condor_q -dag):
// a node job carries its DAG's cluster as DAGManJobId and its node's name
// as DAGNodeName. A node whose DAG's job is not listed is printed alone.
type dagTable struct {
	jobs  *jobTable
	ads   []*classad.ClassAd
	nodes map[int64][]*classad.ClassAd // by DAGManJobId
	dags  map[int64]bool               // clusters listed
}

func newDAGTable(w io.Writer, times runTimes) *dagTable {
	t := &dagTable{jobs: &jobTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0), times: times, now: time.Now().Unix()},
		nodes: map[int64][]*classad.ClassAd{}, dags: map[int64]bool{}}
	fmt.Fprintf(t.jobs.tw, " ID\tOWNER/NODENAME\tSUBMITTED\t%s\tST\tPRI\tSIZE\tCMD\n", times.head())
	return t
}

func (t *dagTable) row(ad *classad.ClassAd) {
	c, _ := ad.EvalInt("ClusterId")
	t.dags[c] = true
	t.ads = append(t.ads, ad)
	if dag, ok := ad.EvalInt("DAGManJobId"); ok && dag != c {
		t.nodes[dag] = append(t.nodes[dag], ad)
	}
}

func (t *dagTable) flush() {
	var print func(ad *classad.ClassAd, depth int)
	print = func(ad *classad.ClassAd, depth int) {
		who, _ := ad.EvalString("Owner")
		if depth > 0 {
			node, _ := ad.EvalString("DAGNodeName")
			who = strings.Repeat(" ", depth) + "|-" + node
		}
		t.jobs.rowAs(ad, who)
		if p, _ := ad.EvalInt("ProcId"); p != 0 {
			return // a cluster's nodes come under its first job
		}
		c, _ := ad.EvalInt("ClusterId")
		for _, n := range t.nodes[c] {
			print(n, depth+1)
		}
	}
	for _, ad := range t.ads {
		// Nodes whose DAG's job is listed come under it.
		c, _ := ad.EvalInt("ClusterId")
		if dag, ok := ad.EvalInt("DAGManJobId"); ok && dag != c && t.dags[dag] {
			continue
		}
		print(ad, 0)
	}
	t.jobs.flush()
}

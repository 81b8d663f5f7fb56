package matchmaker

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
	"harrier.dev/harrier/imagecache"
	"harrier.dev/harrier/matchmaker/gang"
)

// A Request is a resource request: idle jobs of one agent that are alike
// for matching (one autocluster), described by one ad that holds the
// attributes matching reads. A plain job ad is a request for one job.
type Request struct {
	ID        string // unique within the agent: the autocluster id, or "ClusterId.ProcId"
	Agent     string // the agent's name
	AgentAddr string // where the agent hears of matches
	Ad        *classad.ClassAd
	// JobIDs are the jobs the request stands for, best first; the request
	// asks for len(JobIDs) machines.
	JobIDs []string
}

// A Job is one idle job: the job a match hands a machine to.
type Job struct {
	ID        string // "ClusterId.ProcId"
	Agent     string
	AgentAddr string
	Ad        *classad.ClassAd // the request's ad
}

// A Machine is one machine (slot) ad.
type Machine struct {
	Name string // the slot's name, "slot1@host"
	Ad   *classad.ClassAd
}

// A Match pairs a job with the machine slot it is to run on.
type Match struct {
	Job     Job
	Request string // the ID of the request the job came from
	Machine Machine
	// Preempts is set when the machine is claimed and the match displaces
	// the job running there.
	Preempts *Preemption
}

// A Preemption names the claim a match displaces and why.
type Preemption struct {
	Reason      string // "rank" or "priority"
	RemoteOwner string
	JobID       string
}

// A Result is the outcome of one negotiation.
type Result struct {
	Matches []Match
	// Rejections counts the jobs that got no machine.
	Rejections int
	// IdleJobs counts the jobs considered.
	IdleJobs int
	// Requests counts the resource requests (autoclusters) considered.
	Requests int
	// CandidateSlots counts the machines that were Unclaimed.
	CandidateSlots int
	// MachineClasses counts the classes the candidate slots fell into.
	MachineClasses int
	// MatchLists counts the matchlists built: one per distinct request ad
	// that allocation reached.
	MatchLists int
	// Preemptions counts the matches that displace a running job.
	Preemptions int
	// LimitsInUse are the uses of the concurrency limits, with this
	// cycle's matches, by lower-case name; nil when no limit is set.
	LimitsInUse map[string]float64
	// GroupQuotas and GroupsInUse are the CPUs of each accounting
	// group's quota and those its claims hold, with this cycle's
	// matches, by lower-case group; nil when no group has a quota.
	GroupQuotas, GroupsInUse map[string]float64
	// SignificantAttributes are the job attributes that machine policies
	// and PREEMPTION_REQUIREMENTS read, lower-cased and sorted: the
	// attributes an agent must keep equal within an autocluster.
	SignificantAttributes []string
	// Phases times the parts of the cycle.
	Phases Phases
}

// Phases are the durations of the parts of a negotiation.
type Phases struct {
	Requests   time.Duration // reading what requests read and bound
	Classify   time.Duration // grouping machines into classes
	Index      time.Duration // building the index of the classes
	MatchLists time.Duration // candidate lookup, matching and ranking
	Allocate   time.Duration // handing out machines in fair-share order
	Preempt    time.Duration // looking for machines to preempt
}

// A Prioritizer gives each submitter a priority value; submitters with a
// smaller value negotiate first and get a larger share of the machines, as
// with HTCondor's user priorities. Values must be positive.
type Prioritizer interface {
	Priority(submitter string) float64
}

// A Negotiator decides matches. Its decisions are a pure function of its
// input: it reads ads, never changes them, and keeps no state between
// cycles (it reads the clock only to time its phases).
type Negotiator struct {
	// Priorities orders submitters and sizes their shares; nil treats all
	// submitters as one, so that requests negotiate purely in job order.
	Priorities Prioritizer
	// PreemptionRequirements, unless zero, lets a request preempt a
	// claimed machine whose RemoteOwner is another submitter when it
	// evaluates to true with MY the machine ad, TARGET the request, and
	// RemoteUserPrio and SubmitterUserPrio set in the machine ad.
	PreemptionRequirements classad.Expr
	// Workers bounds the goroutines that read requests and build
	// matchlists; 0 means GOMAXPROCS.
	Workers int
	// GangAlgorithm is how MarshalGangs searches for gangs.
	GangAlgorithm gang.Algorithm
	// Limits are the pool's concurrency limits: a request whose job's
	// ConcurrencyLimits would take one past its maximum, counting the
	// uses the machine ads show and this cycle's matches, gets no more
	// machines. nil: none.
	Limits *Limits
}

// Negotiate pairs jobs with machines.
//
// Unclaimed machines are candidates for every request, each matched at
// most once. Submitters negotiate in priority order, each up to its share
// of the machines left (its weight 1/priority over the sum of weights),
// round after round until no submitter can use another machine. Within a
// submitter requests go by JobPrio (higher first), then QDate, ClusterId
// and ProcId (earlier first), and each request takes machines from its
// matchlist: the candidates it matches (both Requirements true), by the
// request's Rank of the machine (higher first), then machines that hold
// the request's container image (CachedImages) before those that would
// have to pull it, then the machine's Rank of the request, then slot name
// among interchangeable machines and, between classes of machines, the
// name of each class's first slot.
//
// A request whose ConcurrencyLimits would take a limit past its maximum
// (see Limits) gets no machine, by match or by preemption.
//
// A request left with jobs may then preempt: a Claimed machine that
// publishes CurrentRank and ranks the request higher (rank preemption), or
// one running another submitter's job where PreemptionRequirements holds
// (priority preemption).
func (n Negotiator) Negotiate(reqs []Request, machines []Machine) Result {
	g := &negotiation{n: n, reqs: reqs, machines: machines}
	g.partition(machines)
	g.timed(&g.res.Phases.Requests, g.readRequests)
	g.timed(&g.res.Phases.Classify, g.classify)
	g.timed(&g.res.Phases.Requests, g.shareMatchlists)
	g.timed(&g.res.Phases.Index, g.buildIndex)
	g.timed(&g.res.Phases.MatchLists, g.buildFirstMatchlists)
	g.allocate()
	g.timed(&g.res.Phases.Preempt, g.preempt)
	return g.result()
}

// negotiation is one call of Negotiate: its input, what each phase works
// out for the next, and the result as it is filled in.
type negotiation struct {
	n    Negotiator
	reqs []Request
	res  Result

	machines      []Machine
	free, claimed []Machine
	// parts are the Unclaimed partitionable slots, matched apart from
	// the classes: each match changes what one has left.
	parts []partSlot
	// plans[i] is request i's plan; distinct are the plans, one per
	// request ad that differs in what a match reads.
	plans    []*plan
	distinct []*plan
	jobRefs  map[string]bool // machine attributes the requests read
	classes  []machineClass
	reps     []*classad.ClassAd // each class's representative ad
	index    *classIndex
	queues   []*submitterQueue
	matchers []*classad.Matcher
	alloc    allocator
	want     []int
}

// timed runs phase and adds its duration to d.
func (g *negotiation) timed(d *time.Duration, phase func()) {
	t := time.Now()
	phase()
	*d += time.Since(t)
}

// partition sorts the machines into candidates (Unclaimed) and those a
// request might preempt (Claimed).
func (g *negotiation) partition(machines []Machine) {
	for _, m := range machines {
		switch state(m.Ad) {
		case StateUnclaimed:
			if isPartitionable(m.Ad) {
				// The negotiator's own copy, which its matches consume.
				ad := m.Ad.Copy()
				g.parts = append(g.parts, partSlot{m: m, ad: ad, left: slotQuantity(ad)})
				continue
			}
			g.free = append(g.free, m)
		case StateClaimed:
			g.claimed = append(g.claimed, m)
		}
	}
	g.res.CandidateSlots = len(g.free) + len(g.parts)
	g.res.Requests = len(g.reqs)
}

// readRequests works out, once per distinct request ad, what it reads in
// machines and which of its conjuncts the index can use.
func (g *negotiation) readRequests() {
	reqs := g.reqs
	texts := make([]string, len(reqs))
	g.n.parallel(len(reqs), func(i int) { texts[i] = reqs[i].Ad.String() })
	g.plans = make([]*plan, len(reqs))
	byText := map[string]*plan{}
	for i := range reqs {
		g.res.IdleJobs += len(reqs[i].JobIDs)
		p, ok := byText[texts[i]]
		if !ok {
			p = &plan{ad: reqs[i].Ad}
			byText[texts[i]] = p
			g.distinct = append(g.distinct, p)
		}
		g.plans[i] = p
	}
	g.n.parallel(len(g.distinct), func(i int) { g.distinct[i].analyze() })
	g.jobRefs = map[string]bool{}
	for _, p := range g.distinct {
		for a := range p.external {
			g.jobRefs[a] = true
		}
	}
}

// classify groups the candidate machines into classes equal in every
// attribute a request reads, and finds the significant attributes: those,
// and what claimed machines and PREEMPTION_REQUIREMENTS read.
func (g *negotiation) classify() {
	external := map[string]bool{}
	cl := newClassifier(sortedKeys(g.jobRefs))
	g.classes, _ = cl.classify(g.free, external)
	for _, m := range g.claimed {
		cl.signature(m.Ad, external)
	}
	if !g.n.PreemptionRequirements.IsZero() {
		pr := newRefs()
		pr.addRefs(classad.New(), exprtext.Scan(g.n.PreemptionRequirements.String()))
		for a := range pr.external {
			external[a] = true
		}
	}
	if len(g.parts) > 0 {
		for _, a := range partitionableRequestAttrs {
			external[a] = true
		}
	}
	g.res.SignificantAttributes = sortedKeys(external)
	g.res.MachineClasses = len(g.classes)
}

// shareMatchlists gives requests equal in everything a match reads,
// whoever submitted them, one plan and so one matchlist: the
// autoclustering of the seed paper, across agents and submitters.
func (g *negotiation) shareMatchlists() {
	keys := make([]string, len(g.distinct))
	g.n.parallel(len(g.distinct), func(i int) { keys[i] = g.distinct[i].matchKey(g.res.SignificantAttributes) })
	shared := map[string]*plan{}
	canon := make(map[*plan]*plan, len(g.distinct))
	kept := g.distinct[:0:0]
	for i, p := range g.distinct {
		if c, ok := shared[keys[i]]; ok {
			canon[p] = c
			continue
		}
		shared[keys[i]] = p
		canon[p] = p
		kept = append(kept, p)
	}
	for i := range g.plans {
		g.plans[i] = canon[g.plans[i]]
	}
	g.distinct = kept
}

// buildIndex indexes the classes' representatives by the attributes the
// requests bound.
func (g *negotiation) buildIndex() {
	indexed := map[string]bool{}
	for _, p := range g.distinct {
		for _, b := range p.bounds {
			indexed[b.attr] = true
		}
	}
	g.reps = make([]*classad.ClassAd, len(g.classes))
	for i := range g.classes {
		g.reps[i] = g.classes[i].rep
	}
	g.index = buildIndex(g.reps, sortedKeys(indexed))
}

// buildFirstMatchlists builds, in parallel, the matchlists of every
// submitter's first request, which surely negotiates; the others are
// built when allocation reaches them, which with more jobs than machines
// it often never does.
func (g *negotiation) buildFirstMatchlists() {
	g.queues = submitterQueues(g.reqs, g.n.Priorities)
	var first []*plan
	for _, q := range g.queues {
		if p := g.plans[q.reqs[0]]; !p.built {
			p.built = true
			first = append(first, p)
		}
	}
	g.matchers = make([]*classad.Matcher, g.n.workers())
	for i := range g.matchers {
		g.matchers[i] = classad.NewMatcher()
	}
	g.n.parallelWorker(len(first), func(w, i int) { first[i].build(g.matchers[w], g.reps, g.index, nil) })
	g.alloc = allocator{free: g.free, parts: g.parts, classes: g.classes, reps: g.reps, index: g.index, n: g.n, matchers: g.matchers, built: len(first)}
	if !g.n.Limits.empty() {
		g.alloc.limits = newLimitCounter(g.n.Limits, g.machines)
	}
}

// allocate gives submitters their shares of the candidates; the
// matchlists it builds on the way count as matchlist time.
func (g *negotiation) allocate() {
	t := time.Now()
	g.want = make([]int, len(g.reqs))
	for i := range g.reqs {
		g.want[i] = len(g.reqs[i].JobIDs)
	}
	g.alloc.allocate(g.reqs, g.plans, g.queues, g.want)
	// What the groups at their quotas left goes, in fair share, to the
	// groups that accept surplus.
	if c := g.alloc.limits; c != nil && c.anySurplus() {
		c.surplus = true
		var again []*submitterQueue
		for _, q := range submitterQueues(g.reqs, g.n.Priorities) {
			q.reqs = slices.DeleteFunc(q.reqs, func(i int) bool {
				ch, _ := g.alloc.fitsLimits(g.reqs, i)
				return g.want[i] == 0 || !g.n.Limits.Groups[ch.group].AcceptSurplus
			})
			if len(q.reqs) > 0 {
				again = append(again, q)
			}
		}
		g.alloc.allocate(g.reqs, g.plans, again, g.want)
	}
	g.res.Phases.Allocate = time.Since(t) - g.alloc.building
	g.res.Phases.MatchLists += g.alloc.building
	g.res.MatchLists = g.alloc.built
}

// preempt lets requests left with jobs take claimed machines.
func (g *negotiation) preempt() {
	if len(g.claimed) > 0 {
		g.alloc.preempt(g.reqs, g.want, g.claimed, g.n)
	}
}

func (g *negotiation) result() Result {
	res := g.res
	res.Matches = g.alloc.matches
	for _, m := range g.alloc.matches {
		if m.Preempts != nil {
			res.Preemptions++
		}
	}
	res.Rejections = res.IdleJobs - len(g.alloc.matches)
	if c := g.alloc.limits; c != nil {
		res.LimitsInUse = c.used
		res.GroupQuotas, res.GroupsInUse = c.quota, c.groupUsed
	}
	return res
}

// A plan is what the negotiator works out once per distinct request ad.
type plan struct {
	ad       *classad.ClassAd
	internal map[string]bool // own attributes Requirements and Rank reach
	external map[string]bool // machine attributes Requirements and Rank read
	bounds   []bound
	built    bool        // list is built, or being built
	list     []listEntry // the matchlist, best first
	cursor   int         // list[:cursor] are exhausted classes
	// image is the request's container image as machines name it in
	// CachedImages (imagecache.NormalName); "" for none.
	image string
}

// listEntry is one class in a matchlist.
type listEntry struct {
	class    int32
	jobRank  float64
	hasImage bool // the class's machines hold the request's image
	slotRank float64
}

// attrCachedImages is the machine attribute that names the container
// images a machine holds.
const attrCachedImages = "CachedImages"

// holdsImage says whether machine ad names image among its CachedImages.
func holdsImage(ad *classad.ClassAd, image string) bool {
	names, _ := ad.Eval(attrCachedImages).ListValue()
	for _, v := range names {
		if s, ok := v.StringValue(); ok && s == image {
			return true
		}
	}
	return false
}

// analyze finds what p's Requirements and Rank read in machines and the
// bounds its Requirements put on them.
func (p *plan) analyze() {
	r := exprRefs(p.ad, "Requirements", "Rank")
	p.internal, p.external = r.internal, r.external
	for _, a := range []string{"ContainerImage", "DockerImage"} {
		if ref, _ := p.ad.EvalString(a); ref != "" {
			p.image = imagecache.NormalName(ref)
			break
		}
	}
	if p.image != "" {
		// Machines that differ in it are in different classes.
		p.external[strings.ToLower(attrCachedImages)] = true
	}
	if e, ok := p.ad.Lookup("Requirements"); ok {
		text := e.String()
		for _, c := range exprtext.Conjuncts(exprtext.Scan(text)) {
			if b, ok := boundOf(p.ad, text, c); ok {
				p.bounds = append(p.bounds, b)
			}
		}
	}
}

// matchKey is the text of every attribute of p's ad that matching can
// read: what its Requirements and Rank reach, and the significant
// attributes machines read, with what those reach in turn.
func (p *plan) matchKey(significant []string) string {
	r := newRefs()
	for n := range p.internal {
		r.internal[n] = true
	}
	for _, n := range significant {
		r.internal[n] = true
	}
	r.closure(p.ad)
	names := sortedKeys(r.internal)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(exprText(p.ad, n))
		b.WriteByte(0)
	}
	return b.String()
}

func (n Negotiator) workers() int {
	if n.Workers > 0 {
		return n.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// parallel calls f(i) for every i below count, spread over n's workers.
func (n Negotiator) parallel(count int, f func(i int)) {
	n.parallelWorker(count, func(_, i int) { f(i) })
}

// parallelWorker is parallel that also tells f which worker (below
// n.workers()) calls it, so that workers can have their own state.
func (n Negotiator) parallelWorker(count int, f func(worker, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(n.workers(), count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				f(w, i)
			}
		}()
	}
	wg.Wait()
}

// build fills p.list: the candidate classes p's ad matches, best first.
// Classes given in live that have no free machine left are skipped
// without evaluation: they will not have one again in this cycle.
func (p *plan) build(m *classad.Matcher, reps []*classad.ClassAd, index *classIndex, live []machineClass) {
	for _, c := range index.candidates(p.bounds) {
		if live != nil && live[c].free() == 0 {
			continue
		}
		rep := reps[c]
		if !m.Match(p.ad, rep) {
			continue
		}
		e := listEntry{class: c, jobRank: m.Rank(p.ad, rep), slotRank: m.Rank(rep, p.ad)}
		e.hasImage = p.image != "" && holdsImage(rep, p.image)
		p.list = append(p.list, e)
	}
	slices.SortStableFunc(p.list, func(a, b listEntry) int {
		if c := cmp.Compare(b.jobRank, a.jobRank); c != 0 {
			return c
		}
		if a.hasImage != b.hasImage {
			if a.hasImage {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.slotRank, a.slotRank)
	})
}

// allocator hands out the free machines of one cycle.
type allocator struct {
	free  []Machine
	parts []partSlot
	// partPlans are the plans' progress through parts, made as plans
	// first try them, so that a pool without partitionable slots pays
	// nothing for them.
	partPlans map[*plan]*partPlan
	classes   []machineClass
	matches   []Match
	taken     map[string]bool // claimed machines preempted in this cycle
	// limits counts the concurrency limits' uses and the groups' CPUs;
	// nil: no limits.
	limits  *limitCounter
	charges map[int]charge // by request, read as requests negotiate

	// For matchlists built on demand.
	reps     []*classad.ClassAd
	index    *classIndex
	n        Negotiator
	matchers []*classad.Matcher // one per worker
	built    int                // matchlists built in this cycle
	building time.Duration      // time spent building them on demand
}

// prefetch makes sure the plan of the request a queue is at is built. If
// it is not, it builds it together, in parallel, with the plans of the
// queue's next requests, which the queue will most likely reach next.
func (a *allocator) prefetch(q *submitterQueue, plans []*plan) {
	if plans[q.reqs[q.at]].built {
		return
	}
	t := time.Now()
	var batch []*plan
	for _, i := range q.reqs[q.at:] {
		if p := plans[i]; !p.built {
			p.built = true
			batch = append(batch, p)
			if len(batch) == 8*len(a.matchers) {
				break
			}
		}
	}
	a.n.parallelWorker(len(batch), func(w, i int) { batch[i].build(a.matchers[w], a.reps, a.index, a.classes) })
	a.built += len(batch)
	a.building += time.Since(t)
}

// take gives the next free machine of p's matchlist, which must be built,
// to request r or, with the list exhausted, a dynamic slot carved from a
// partitionable slot. It reports the machine's weight in the fair share
// (a static slot counts one, a dynamic slot its CPUs), or false when
// there is no machine left for p.
func (a *allocator) take(r *Request, p *plan, job int) (int, bool) {
	for p.cursor < len(p.list) {
		c := &a.classes[p.list[p.cursor].class]
		if c.free() == 0 {
			p.cursor++
			continue
		}
		m := a.free[c.members[c.next]]
		c.next++
		a.matches = append(a.matches, Match{
			Job:     Job{ID: r.JobIDs[job], Agent: r.Agent, AgentAddr: r.AgentAddr, Ad: r.Ad},
			Request: r.ID,
			Machine: m,
		})
		return 1, true
	}
	if len(a.parts) > 0 {
		return a.carve(r, p, job)
	}
	return 0, false
}

// fitsLimits reports whether one more job of request i fits the
// concurrency limits and its group's quota, and gives what it takes.
func (a *allocator) fitsLimits(reqs []Request, i int) (charge, bool) {
	if a.limits == nil {
		return charge{}, true
	}
	ch, ok := a.charges[i]
	if !ok {
		ch = charge{uses: limitsOf(reqs[i].Ad, AttrConcurrencyLimits)}
		if g := groupOf(reqs[i].Ad); g != "" {
			ch.group, ch.cpus = g, cpusOf(reqs[i].Ad, "RequestCpus")
		}
		if a.charges == nil {
			a.charges = map[int]charge{}
		}
		a.charges[i] = ch
	}
	return ch, a.limits.allows(ch)
}

// quotaGroup is the group whose quota bounds the jobs of q, all charged
// to one submitter; "" for none, or in the surplus pass.
func (a *allocator) quotaGroup(reqs []Request, q *submitterQueue) string {
	if a.limits == nil || a.limits.quota == nil || a.limits.surplus || len(q.reqs) == 0 {
		return ""
	}
	ch, _ := a.fitsLimits(reqs, q.reqs[0])
	if _, ok := a.limits.quota[ch.group]; !ok {
		return ""
	}
	return ch.group
}

// submitterQueue is one submitter's requests in negotiation order.
type submitterQueue struct {
	name   string
	prio   float64
	reqs   []int // indices into the cycle's requests
	at     int   // reqs[:at] are done
	served int   // jobs of reqs[at] already matched, where gangs are
}

// allocate serves the requests in fair-share order, each for its jobs
// want counts as still without a machine (the first of them have one),
// and leaves in want how many are still without.
func (a *allocator) allocate(reqs []Request, plans []*plan, queues []*submitterQueue, want []int) {
	left := 0
	for i := range a.classes {
		left += a.classes[i].free()
	}
	for i := range a.parts {
		left += int(a.parts[i].left.cpus)
	}
	for left > 0 {
		var weight float64
		active := queues[:0:0]
		// The users of a group with a quota share what the quota has
		// room for, by their priorities.
		var groupWeight map[string]float64
		for _, q := range queues {
			if q.at < len(q.reqs) {
				active = append(active, q)
				weight += 1 / q.prio
				if g := a.quotaGroup(reqs, q); g != "" {
					if groupWeight == nil {
						groupWeight = map[string]float64{}
					}
					groupWeight[g] += 1 / q.prio
				}
			}
		}
		if len(active) == 0 {
			break
		}
		progress := false
		pie := float64(left)
		groupRoom := make(map[string]float64, len(groupWeight))
		for g := range groupWeight {
			groupRoom[g] = max(a.limits.quota[g]-a.limits.groupUsed[g], 0)
		}
		for _, q := range active {
			// Round shares up, so that every round makes progress.
			quota := int(math.Ceil(pie/q.prio/weight - 1e-9))
			if g := a.quotaGroup(reqs, q); g != "" {
				quota = min(quota, int(math.Ceil(groupRoom[g]/q.prio/groupWeight[g]-1e-9)))
			}
			for quota > 0 && left > 0 && q.at < len(q.reqs) {
				i := q.reqs[q.at]
				a.prefetch(q, plans)
				if want[i] == 0 {
					q.at++
					continue
				}
				ch, fits := a.fitsLimits(reqs, i)
				if !fits {
					q.at++
					continue
				}
				took, ok := a.take(&reqs[i], plans[i], len(reqs[i].JobIDs)-want[i])
				if !ok {
					q.at++
					continue
				}
				a.limits.add(ch)
				want[i]--
				quota -= took
				left -= took
				progress = true
			}
		}
		if !progress {
			break
		}
	}
}

// submitterQueues groups request indices by submitter, submitters in
// priority order (ties by name), each submitter's requests in job order.
// Without a Prioritizer all requests form one queue.
func submitterQueues(reqs []Request, p Prioritizer) []*submitterQueue {
	by := map[string]*submitterQueue{}
	var queues []*submitterQueue
	for i := range reqs {
		name := ""
		if p != nil {
			name = submitter(&reqs[i])
		}
		q, ok := by[name]
		if !ok {
			q = &submitterQueue{name: name, prio: 1}
			if p != nil {
				q.prio = max(p.Priority(name), minPriority)
			}
			by[name] = q
			queues = append(queues, q)
		}
		q.reqs = append(q.reqs, i)
	}
	keys := make([]jobKey, len(reqs))
	for i := range reqs {
		keys[i] = keyOfJob(reqs[i].Ad)
	}
	for _, q := range queues {
		slices.SortStableFunc(q.reqs, func(a, b int) int { return keys[a].compare(keys[b]) })
	}
	slices.SortStableFunc(queues, func(a, b *submitterQueue) int {
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return queues
}

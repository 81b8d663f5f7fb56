package agent

import (
	"hash/fnv"
	"regexp"
	"slices"
	"strings"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
)

// Autoclustering, after section 4 of Tannenbaum's "A New Architecture for
// Matchmaking in Condor": jobs whose significant attributes are equal are
// interchangeable for matching, so the agent sends the matchmaker one
// resource request per group (autocluster) with the list of its jobs,
// instead of every job ad. The significant attributes are those the
// negotiator publishes (what machine policies read of a job), the job's
// Requirements and Rank, every job attribute those reach, Owner, since
// requests are per submitter, and the job's container image, which the
// negotiator prefers machines to hold.

// orderAttrs order a submitter's requests; a request carries those of its
// best job.
var orderAttrs = []string{AttrJobPrio, AttrQDate, AttrClusterID, AttrProcID}

// identifier finds the names in printed expression text. It finds more
// than the references (function names, scope keywords, words in strings),
// which only adds attributes the job may not have: harmless, as a missing
// attribute adds nothing to a signature.
var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// idleJob is an idle job as the advertiser sees it.
type idleJob struct {
	id jobqueue.JobID
	ad *classad.ClassAd
}

// clusterer groups the idle jobs sent to one matchmaker into
// autoclusters, round after round. It keeps what it derived from each
// job's ad in the last round: the queue never changes an ad it has
// handed out (a change to a job replaces its ad), so an ad seen before
// needs no work again, and a round over a large queue costs little more
// than its scan. What it keeps is bounded by the last round's idle jobs.
// Only the advertiser uses it.
type clusterer struct {
	significant []string // the negotiator's list the keys were derived under
	keys        map[*classad.ClassAd]*jobKey
}

// jobKey is what autoclustering derives from one job's ad.
type jobKey struct {
	attrs []string      // its significant attributes (significantOf); nil without a list
	sig   string        // their text (signature)
	id    classad.Value // "cluster.proc", for the request's job list
	// order holds the values of orderAttrs, JobPrio negated, so that
	// jobs sort in the order the negotiator serves them.
	order [4]int64
}

// requests groups jobs by their significant attributes and returns one
// resource request ad per group, in the order of each group's best job.
// With significant nil (the negotiator has not said what it reads) every
// job is a request of its own: its whole ad.
func (c *clusterer) requests(jobs []idleJob, significant []string) []*classad.ClassAd {
	if !slices.Equal(c.significant, significant) || (c.significant == nil) != (significant == nil) {
		c.keys = nil // derived under another list
	}
	c.significant = significant
	prev := c.keys
	c.keys = make(map[*classad.ClassAd]*jobKey, len(jobs))
	names := map[string][]string{} // expression text → the names in it
	type keyed struct {
		ad  *classad.ClassAd
		key *jobKey
	}
	all := make([]keyed, len(jobs))
	for i, j := range jobs {
		k := prev[j.ad]
		if k == nil {
			k = newJobKey(j, significant, names)
		}
		c.keys[j.ad] = k
		all[i] = keyed{j.ad, k}
	}
	slices.SortStableFunc(all, func(a, b keyed) int { return slices.Compare(a.key.order[:], b.key.order[:]) })
	if significant == nil {
		out := make([]*classad.ClassAd, len(all))
		for i, j := range all {
			ad := j.ad.Copy()
			ad.SetString("MyType", "Job")
			ad.SetString("TargetType", "Machine")
			out[i] = ad
		}
		return out
	}
	type group struct {
		key   *jobKey // of its best job
		first *classad.ClassAd
		ids   []classad.Value
	}
	var groups []*group
	bySig := map[string]*group{}
	for _, j := range all {
		g := bySig[j.key.sig]
		if g == nil {
			g = &group{key: j.key, first: j.ad}
			bySig[j.key.sig] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, j.key.id)
	}
	out := make([]*classad.ClassAd, len(groups))
	for i, g := range groups {
		ad := classad.New()
		ad.SetString("MyType", "Job")
		ad.SetString("TargetType", "Machine")
		keep := map[string]bool{}
		for _, name := range append(g.key.attrs, orderAttrs...) {
			keep[strings.ToLower(name)] = true
		}
		for _, name := range g.first.Names() { // keeps the names' spelling
			if keep[strings.ToLower(name)] {
				e, _ := g.first.Lookup(name)
				ad.Set(name, e)
			}
		}
		ad.SetInt(matchmaker.AttrAutoClusterID, clusterID(g.key.sig))
		ad.SetValue(matchmaker.AttrJobIDs, classad.List(g.ids...))
		out[i] = ad
	}
	return out
}

// newJobKey derives j's key; names memoizes the names found in
// expression texts, which the jobs of a cluster share.
func newJobKey(j idleJob, significant []string, names map[string][]string) *jobKey {
	k := &jobKey{id: classad.String(j.id.String())}
	for i, n := range orderAttrs {
		k.order[i], _ = j.ad.EvalInt(n)
	}
	k.order[0] = -k.order[0] // JobPrio: higher first
	if significant != nil {
		k.attrs = significantOf(j.ad, significant, names)
		k.sig = signature(j.ad, k.attrs)
	}
	return k
}

// significantOf returns the attributes that make up ad's signature,
// sorted and lower-cased: the negotiator's, Owner, Requirements, Rank and
// every attribute of ad those reach through its expressions. names
// memoizes the names found in expression texts, which the jobs of a
// cluster share.
func significantOf(ad *classad.ClassAd, significant []string, names map[string][]string) []string {
	seen := map[string]bool{}
	var todo []string
	add := func(name string) {
		name = strings.ToLower(name)
		if !seen[name] {
			seen[name] = true
			todo = append(todo, name)
		}
	}
	for _, n := range significant {
		add(n)
	}
	add(AttrOwner)
	add(AttrRequirements)
	add(AttrRank)
	// A gang job's Ports are its requirements.
	add(AttrPorts)
	// The negotiator counts a job's concurrency limits, and negotiates
	// for its accounting group.
	add(matchmaker.AttrConcurrencyLimits)
	add(AttrAccountingGroup)
	// The negotiator prefers machines that hold a job's image.
	add("ContainerImage")
	add("DockerImage")
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if e, ok := ad.Lookup(name); ok {
			if _, literal := e.AsLiteral(); !literal {
				text := e.String()
				refs, ok := names[text]
				if !ok {
					refs = identifier.FindAllString(text, -1)
					names[text] = refs
				}
				for _, ref := range refs {
					if _, ok := ad.Lookup(ref); ok {
						add(ref)
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// signature is the text of ad's attributes attrs, in order.
func signature(ad *classad.ClassAd, attrs []string) string {
	var b strings.Builder
	for _, n := range attrs {
		b.WriteString(n)
		b.WriteByte('=')
		if e, ok := ad.Lookup(n); ok {
			b.WriteString(e.String())
		}
		b.WriteByte(0)
	}
	return b.String()
}

// clusterID names an autocluster by its signature, so that the name is
// stable across advertisements without the agent keeping a table.
func clusterID(sig string) int64 {
	h := fnv.New64a()
	h.Write([]byte(sig))
	return int64(h.Sum64() >> 1)
}

// parseSignificant reads the negotiator's list of significant attributes;
// ok is false when the ad publishes none.
func parseSignificant(negotiator *classad.ClassAd) (attrs []string, ok bool) {
	s, ok := negotiator.EvalString(matchmaker.AttrSignificantAttributes)
	if !ok {
		return nil, false
	}
	attrs = []string{}
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			attrs = append(attrs, a)
		}
	}
	return attrs, true
}

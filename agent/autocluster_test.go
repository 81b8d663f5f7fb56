package agent

import (
	"fmt"
	"slices"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
)

func idleJobAd(t *testing.T, cluster, proc int, extra string) idleJob {
	t.Helper()
	ad, err := classad.Parse(fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; QDate = %d; Owner = "alice";
		Cmd = "/bin/sim"; Arguments = "run %d"; RequestMemory = 512; DiskUsage = 100;
		Requirements = TARGET.Memory >= MY.RequestMemory && TARGET.Disk > DiskUsage; %s ]`, cluster, proc, cluster, proc, extra))
	if err != nil {
		t.Fatal(err)
	}
	return idleJob{id: jobqueue.JobID{Cluster: cluster, Proc: proc}, ad: ad}
}

func requestIDs(t *testing.T, ad *classad.ClassAd) []string {
	t.Helper()
	list, ok := ad.Eval(matchmaker.AttrJobIDs).ListValue()
	if !ok {
		t.Fatalf("request without %s: %s", matchmaker.AttrJobIDs, ad)
	}
	var ids []string
	for _, v := range list {
		s, _ := v.StringValue()
		ids = append(ids, s)
	}
	return ids
}

func TestAutoclustersGroupBySignificantAttributes(t *testing.T) {
	jobs := []idleJob{
		idleJobAd(t, 1, 0, ""),
		idleJobAd(t, 1, 1, ""),                       // differs only in Arguments: same cluster
		idleJobAd(t, 2, 0, "RequestMemory = 4096"),   // referenced by Requirements
		idleJobAd(t, 2, 1, `Department = "Physics"`), // read by machines' Rank
		idleJobAd(t, 1, 2, "JobPrio = 5"),            // same cluster, served first
		idleJobAd(t, 3, 0, `Owner = "bob"`),          // another submitter
	}
	reqs := new(clusterer).requests(jobs, []string{"Department"})
	var got [][]string
	for _, r := range reqs {
		got = append(got, requestIDs(t, r))
		if _, ok := r.Lookup("Arguments"); ok {
			t.Errorf("request carries insignificant Arguments: %s", r)
		}
		if _, ok := r.Lookup("DiskUsage"); !ok {
			t.Errorf("request lacks DiskUsage, which Requirements reads: %s", r)
		}
	}
	want := [][]string{{"1.2", "1.0", "1.1"}, {"2.0"}, {"2.1"}, {"3.0"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("autoclusters %v, want %v", got, want)
	}
	if p, _ := reqs[0].EvalInt("JobPrio"); p != 5 {
		t.Errorf("first request's JobPrio %d, want its best job's 5", p)
	}
	// The same jobs give the same cluster ids.
	again := new(clusterer).requests(jobs, []string{"Department"})
	for i := range reqs {
		a, _ := reqs[i].EvalInt(matchmaker.AttrAutoClusterID)
		b, _ := again[i].EvalInt(matchmaker.AttrAutoClusterID)
		if a != b {
			t.Errorf("request %d: cluster id %d then %d", i, a, b)
		}
	}
}

func TestAutoclustersWithoutSignificantAttributes(t *testing.T) {
	jobs := []idleJob{idleJobAd(t, 1, 0, ""), idleJobAd(t, 1, 1, "")}
	reqs := new(clusterer).requests(jobs, nil)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want one per job", len(reqs))
	}
	if _, ok := reqs[0].Lookup(matchmaker.AttrJobIDs); ok {
		t.Errorf("a plain job ad carries %s", matchmaker.AttrJobIDs)
	}
	if a, _ := reqs[1].EvalString("Arguments"); a != "run 1" {
		t.Errorf("plain job ad lost its attributes: %s", reqs[1])
	}
}

func TestParseSignificant(t *testing.T) {
	ad, _ := classad.Parse(`[ SignificantAttributes = "department, requestmemory,," ]`)
	got, ok := parseSignificant(ad)
	if !ok || !slices.Equal(got, []string{"department", "requestmemory"}) {
		t.Errorf("parseSignificant = %v, %v", got, ok)
	}
	if _, ok := parseSignificant(classad.New()); ok {
		t.Error("an ad without the list gave one")
	}
}

// A clusterer derives each ad's key once: a job whose ad the queue
// replaced is grouped by its new ad, a new list of significant
// attributes regroups every job, and what it keeps is the last round's.
func TestClustererKeepsKeysOfUnchangedAds(t *testing.T) {
	jobs := []idleJob{idleJobAd(t, 1, 0, ""), idleJobAd(t, 1, 1, ""), idleJobAd(t, 1, 2, `Department = "Physics"`)}
	var c clusterer
	ids := func(reqs []*classad.ClassAd) [][]string {
		var out [][]string
		for _, r := range reqs {
			out = append(out, requestIDs(t, r))
		}
		return out
	}
	check := func(what string, reqs []*classad.ClassAd, want [][]string) {
		t.Helper()
		if got := ids(reqs); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: requests %v, want %v", what, got, want)
		}
	}
	for i, r := range c.requests(jobs, nil) {
		if p, _ := r.EvalInt("ProcId"); p != int64(i) {
			t.Errorf("without a list, request %d is job 1.%d's ad", i, p)
		}
	}
	first := c.requests(jobs, []string{"requestmemory"})
	check("with a list", first, [][]string{{"1.0", "1.1", "1.2"}})
	again := c.requests(jobs, []string{"requestmemory"})
	check("again", again, [][]string{{"1.0", "1.1", "1.2"}})
	if a, b := first[0].String(), again[0].String(); a != b {
		t.Errorf("the same jobs gave another request:\n%s\n%s", a, b)
	}
	// The queue replaces the ad of a job that changes.
	changed := jobs[1].ad.Copy()
	changed.SetInt("RequestMemory", 4096)
	jobs[1].ad = changed
	check("a job changed", c.requests(jobs, []string{"requestmemory"}), [][]string{{"1.0", "1.2"}, {"1.1"}})
	check("another list", c.requests(jobs, []string{"requestmemory", "department"}), [][]string{{"1.0"}, {"1.1"}, {"1.2"}})
	// A higher JobPrio goes first; the key of the new ad says so.
	prio := jobs[2].ad.Copy()
	prio.SetInt("JobPrio", 10)
	jobs[2].ad = prio
	check("a job raised", c.requests(jobs, []string{"requestmemory", "department"}), [][]string{{"1.2"}, {"1.0"}, {"1.1"}})
	c.requests(jobs[:1], []string{"requestmemory", "department"})
	if len(c.keys) != 1 {
		t.Errorf("after a round of one job the clusterer keeps %d keys", len(c.keys))
	}
}

// BenchmarkAutoclusters groups 100,000 idle jobs: cold, each ad's key
// derived (the agent's first round), and warm, the next rounds over the
// same ads.
func BenchmarkAutoclusters(b *testing.B) {
	var jobs []idleJob
	for i := range 100_000 {
		ad, err := classad.Parse(fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; QDate = %d; Owner = "u%d"; Cmd = "/bin/sim";
			Arguments = "run %d"; RequestMemory = %d; RequestDisk = 1000; JobStatus = 1; Iwd = "/home/u/run%d";
			Requirements = TARGET.Arch == "X86_64" && TARGET.Memory >= MY.RequestMemory && TARGET.Disk >= RequestDisk;
			Rank = TARGET.KFlops ]`, i/1000, i%1000, i/1000, i%50, i, 512<<(i%4), i))
		if err != nil {
			b.Fatal(err)
		}
		jobs = append(jobs, idleJob{id: jobqueue.JobID{Cluster: i / 1000, Proc: i % 1000}, ad: ad})
	}
	significant := []string{"requestmemory", "requestdisk", "department"}
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			c := new(clusterer)
			if warm {
				c.requests(jobs, significant)
			}
			b.ReportAllocs()
			var reqs []*classad.ClassAd
			for b.Loop() {
				if !warm {
					c = new(clusterer)
				}
				reqs = c.requests(jobs, significant)
			}
			b.ReportMetric(float64(len(reqs)), "requests")
		})
	}
}

package matchmaker

import (
	"fmt"
	"slices"
	"testing"

	"harrier.dev/harrier/classad"
)

// pairs renders matches as "job->slot", in the order they were made.
func pairs(res Result) []string {
	var out []string
	for _, m := range res.Matches {
		out = append(out, m.Job.ID+"->"+m.Machine.Name)
	}
	return out
}

func TestNegotiateJobOrder(t *testing.T) {
	jobs := []Request{
		job(t, "ag", 3, 0, "alice", "QDate = 100"),
		job(t, "ag", 1, 1, "alice", "QDate = 100"),
		job(t, "ag", 1, 0, "alice", "QDate = 100"),
		job(t, "ag", 2, 0, "alice", "QDate = 50"),
		job(t, "ag", 4, 0, "alice", "QDate = 200; JobPrio = 5"),
	}
	var machines []Machine
	for i := range 4 {
		machines = append(machines, machine(t, fmt.Sprintf("slot%d@a", i+1), StateUnclaimed, 1024, ""))
	}
	res := Negotiator{}.Negotiate(jobs, machines)
	// JobPrio first, then QDate, then ClusterId, then ProcId; equal ranks
	// leave the slots in name order. The last job finds nothing left.
	want := []string{"4.0->slot1@a", "2.0->slot2@a", "1.0->slot3@a", "1.1->slot4@a"}
	if got := pairs(res); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
	if res.Rejections != 1 || res.IdleJobs != 5 || res.CandidateSlots != 4 {
		t.Errorf("stats: %d rejections, %d idle, %d candidates; want 1, 5, 4", res.Rejections, res.IdleJobs, res.CandidateSlots)
	}
}

func TestNegotiateJobRankPrefersMemory(t *testing.T) {
	machines := []Machine{
		machine(t, "slot1@a", StateUnclaimed, 1024, ""),
		machine(t, "slot1@b", StateUnclaimed, 4096, ""),
		machine(t, "slot1@c", StateUnclaimed, 2048, ""),
	}
	jobs := []Request{
		job(t, "ag", 1, 0, "alice", "Rank = TARGET.Memory"),
		job(t, "ag", 1, 1, "alice", "Rank = TARGET.Memory"),
		job(t, "ag", 1, 2, "alice", "Rank = -TARGET.Memory"),
	}
	want := []string{"1.0->slot1@b", "1.1->slot1@c", "1.2->slot1@a"}
	if got := pairs(Negotiator{}.Negotiate(jobs, machines)); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
}

func TestNegotiateMachineRankBreaksTies(t *testing.T) {
	machines := []Machine{
		machine(t, "slot1@a", StateUnclaimed, 1024, ""),
		machine(t, "slot1@b", StateUnclaimed, 1024, `Rank = TARGET.Owner == "alice"`),
		machine(t, "slot1@c", StateUnclaimed, 1024, `Rank = TARGET.Owner == "bob"`),
	}
	jobs := []Request{job(t, "ag", 1, 0, "bob", "")}
	want := []string{"1.0->slot1@c"}
	if got := pairs(Negotiator{}.Negotiate(jobs, machines)); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
	// The job's own Rank outweighs the machine's.
	jobs = []Request{job(t, "ag", 1, 0, "bob", `Rank = TARGET.Name == "slot1@a"`)}
	want = []string{"1.0->slot1@a"}
	if got := pairs(Negotiator{}.Negotiate(jobs, machines)); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
}

func TestNegotiateNoMatch(t *testing.T) {
	machines := []Machine{
		machine(t, "slot1@a", StateUnclaimed, 1024, ""),
		machine(t, "slot1@b", StateUnclaimed, 1024, `Requirements = TARGET.Owner == "carol"`),
	}
	jobs := []Request{
		job(t, "ag", 1, 0, "alice", "RequestMemory = 1000000"), // too big for any
		job(t, "ag", 2, 0, "alice", `Requirements = TARGET.Arch == "ARM"`),
	}
	res := Negotiator{}.Negotiate(jobs, machines)
	if len(res.Matches) != 0 || res.Rejections != 2 {
		t.Errorf("matches %v, %d rejections; want none, 2", pairs(res), res.Rejections)
	}
}

func TestNegotiateMachineOfferedOnce(t *testing.T) {
	machines := []Machine{machine(t, "slot1@a", StateUnclaimed, 1024, "")}
	jobs := []Request{job(t, "ag", 1, 0, "alice", ""), job(t, "ag2", 1, 0, "bob", "")}
	res := Negotiator{}.Negotiate(jobs, machines)
	if len(res.Matches) != 1 || res.Rejections != 1 {
		t.Errorf("matches %v, %d rejections; want one match, 1 rejection", pairs(res), res.Rejections)
	}
}

func TestNegotiateOnlyUnclaimed(t *testing.T) {
	var machines []Machine
	for _, s := range []string{"Owner", StateMatched, "Claimed", "Preempting", StateUnclaimed} {
		machines = append(machines, machine(t, "slot@"+s, s, 1024, ""))
	}
	jobs := []Request{job(t, "ag", 1, 0, "alice", ""), job(t, "ag", 1, 1, "alice", "")}
	res := Negotiator{}.Negotiate(jobs, machines)
	if got, want := pairs(res), []string{"1.0->slot@Unclaimed"}; !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
	if res.CandidateSlots != 1 {
		t.Errorf("candidate slots %d, want 1", res.CandidateSlots)
	}
}

// prios is a Prioritizer from a table.
type prios map[string]float64

func (p prios) Priority(s string) float64 { return p[s] }

func TestNegotiateSubmitterPriority(t *testing.T) {
	machines := []Machine{machine(t, "slot1@a", StateUnclaimed, 1024, ""), machine(t, "slot1@b", StateUnclaimed, 1024, "")}
	jobs := []Request{
		job(t, "ag", 1, 0, "alice", "JobPrio = 10"),
		job(t, "ag", 1, 1, "alice", "JobPrio = 10"),
		job(t, "ag", 2, 0, "bob", ""),
	}
	// Without priorities job order decides, across submitters.
	if got, want := pairs(Negotiator{}.Negotiate(jobs, machines)), []string{"1.0->slot1@a", "1.1->slot1@b"}; !slices.Equal(got, want) {
		t.Errorf("no priorities: matches %v, want %v", got, want)
	}
	// bob's better (smaller) priority puts his job first.
	n := Negotiator{Priorities: prios{"alice": 10, "bob": 0.5}}
	if got, want := pairs(n.Negotiate(jobs, machines)), []string{"2.0->slot1@a", "1.0->slot1@b"}; !slices.Equal(got, want) {
		t.Errorf("bob first: matches %v, want %v", got, want)
	}
}

func TestNegotiateIsPure(t *testing.T) {
	machines := []Machine{machine(t, "slot1@a", StateUnclaimed, 1024, "")}
	jobs := []Request{job(t, "ag", 1, 0, "alice", "")}
	before := machines[0].Ad.String() + jobs[0].Ad.String()
	first := pairs(Negotiator{}.Negotiate(jobs, machines))
	second := pairs(Negotiator{}.Negotiate(jobs, machines))
	if !slices.Equal(first, second) || len(first) != 1 {
		t.Errorf("repeated negotiation differs: %v then %v", first, second)
	}
	if after := machines[0].Ad.String() + jobs[0].Ad.String(); after != before {
		t.Errorf("negotiation changed its input ads")
	}
}

func BenchmarkNegotiate(b *testing.B) {
	for _, size := range []struct{ machines, jobs int }{{100, 1000}, {1000, 2000}} {
		b.Run(fmt.Sprintf("M=%d/J=%d", size.machines, size.jobs), func(b *testing.B) {
			machines := make([]Machine, size.machines)
			for i := range machines {
				machines[i] = machine(b, fmt.Sprintf("slot%d@host%d", i%8, i/8), StateUnclaimed, 1024<<(i%4), `Rank = TARGET.Owner == "u1"`)
			}
			jobs := make([]Request, size.jobs)
			for i := range jobs {
				owner := fmt.Sprintf("u%d", i%10)
				jobs[i] = job(b, "ag", i/100, i%100, owner, fmt.Sprintf("QDate = %d; RequestMemory = %d; Rank = TARGET.Memory", i, 512<<(i%6)))
			}
			b.ReportAllocs()
			var res Result
			for b.Loop() {
				res = Negotiator{}.Negotiate(jobs, machines)
			}
			b.ReportMetric(float64(len(res.Matches)), "matches")
		})
	}
}

// A job in a container image goes to a machine that holds the image, by
// name or by digest, before one that would pull it, and before what the
// machine's Rank prefers; the job's own Rank still comes first.
func TestNegotiatePrefersCachedImage(t *testing.T) {
	const held = `CachedImages = {"reg.example:5000/lab/tool:2", "reg.example:5000/lab/tool@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`
	machines := []Machine{
		machine(t, "slot1@a", StateUnclaimed, 1024, `CachedImages = {}`),
		machine(t, "slot1@b", StateUnclaimed, 1024, `Rank = TARGET.Owner == "alice"`),
		machine(t, "slot1@c", StateUnclaimed, 1024, held),
	}
	for _, tc := range []struct {
		extra, want string
	}{
		{`ContainerImage = "docker://reg.example:5000/lab/tool:2"`, "1.0->slot1@c"},
		{`DockerImage = "reg.example:5000/lab/tool@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"`, "1.0->slot1@c"},
		{`ContainerImage = "docker://reg.example:5000/lab/tool:3"`, "1.0->slot1@b"},
		{`ContainerImage = "docker://reg.example:5000/lab/tool:2"` + "\n" + `Rank = TARGET.Name == "slot1@a"`, "1.0->slot1@a"},
	} {
		jobs := []Request{job(t, "ag", 1, 0, "alice", tc.extra)}
		if got := pairs(Negotiator{}.Negotiate(jobs, machines)); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s: matches %v, want %s", tc.extra, got, tc.want)
		}
	}
}

// Analyze counts, for a job in its own image, the machines that run
// such jobs and those that hold the image.
func TestAnalyzeContainerImage(t *testing.T) {
	machines := []*classad.ClassAd{
		mustParse(t, machineText("slot1@a", StateUnclaimed, 1024, "HasContainer = true\nCachedImages = {\"reg.example/lab/tool:2\"}")),
		mustParse(t, machineText("slot1@b", StateUnclaimed, 1024, "HasContainer = true\nCachedImages = {}")),
		mustParse(t, machineText("slot1@c", StateUnclaimed, 1024, "")),
	}
	job := mustParse(t, jobText(1, 0, "alice", `ContainerImage = "docker://reg.example/lab/tool:2"`+"\nRequirements = TARGET.HasContainer"))
	a := Analyze(job, machines)
	if a.Image != "docker://reg.example/lab/tool:2" || a.ImageNeeds != "HasContainer" || a.RunImage != 2 || a.HoldImage != 1 {
		t.Errorf("analysis: image %q needs %q, %d run it, %d hold it; want 2 and 1", a.Image, a.ImageNeeds, a.RunImage, a.HoldImage)
	}
	docker := mustParse(t, jobText(1, 1, "alice", `DockerImage = "reg.example/lab/tool:2"`))
	if a := Analyze(docker, machines); a.ImageNeeds != "HasDocker" || a.RunImage != 0 || a.HoldImage != 1 {
		t.Errorf("docker analysis: needs %q, %d run it, %d hold it; want HasDocker, 0, 1", a.ImageNeeds, a.RunImage, a.HoldImage)
	}
}

package matchmaker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// pslot is a partitionable slot's ad with cpus CPUs and memory MiB left.
func pslot(t testing.TB, name string, cpus, memory int) Machine {
	return machine(t, name, StateUnclaimed, memory, fmt.Sprintf("Cpus = %d; PartitionableSlot = true; SlotType = \"Partitionable\"", cpus))
}

func TestNegotiatePartitionable(t *testing.T) {
	machines := []Machine{pslot(t, "slot1@a", 4, 4096), pslot(t, "slot1@b", 4, 1024)}
	var jobs []Request
	// Three 2-CPU jobs of 1 GiB, then four 1-CPU jobs of 512 MiB, of two users.
	for i := range 3 {
		jobs = append(jobs, job(t, "ag", 1, i, "alice", fmt.Sprintf("QDate = %d; RequestCpus = 2; RequestMemory = 1024; Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory", i)))
	}
	for i := range 4 {
		jobs = append(jobs, job(t, "ag", 2, i, "bob", fmt.Sprintf("QDate = %d", 10+i)))
	}
	before := machines[0].Ad.String()
	res := Negotiator{}.Negotiate(jobs, machines)
	// slot1@a takes two 2-CPU jobs (4 CPUs, 2 GiB); slot1@b, with 1 GiB,
	// one 2-CPU job; the 1-CPU jobs find 2 GiB but no CPU on a and 2 CPUs
	// but no memory on b.
	want := []string{"1.0->slot1@a", "1.1->slot1@a", "1.2->slot1@b"}
	if got := pairs(res); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
	if res.Rejections != 4 || res.CandidateSlots != 2 {
		t.Errorf("rejections %d, candidate slots %d; want 4 and 2", res.Rejections, res.CandidateSlots)
	}
	if machines[0].Ad.String() != before {
		t.Errorf("negotiation changed a partitionable slot's ad")
	}
	for _, a := range partitionableRequestAttrs {
		if !slices.Contains(res.SignificantAttributes, a) {
			t.Errorf("significant attributes %v lack %s", res.SignificantAttributes, a)
		}
	}

	// With 1-CPU jobs only, one 4-CPU slot takes four jobs in one cycle.
	jobs = jobs[3:]
	jobs = append(jobs, job(t, "ag", 3, 0, "bob", "QDate = 20"))
	res = Negotiator{}.Negotiate(jobs, machines[:1])
	if len(res.Matches) != 4 || res.Rejections != 1 {
		t.Errorf("1-CPU jobs on a 4-CPU slot: %v, %d rejected; want 4 matches", pairs(res), res.Rejections)
	}
}

// TestNegotiatePartitionableGPUs: GPUs are consumed as CPUs are: a
// partitionable slot with two GPUs takes two 1-GPU jobs in a cycle, not
// three, however many CPUs it has left.
func TestNegotiatePartitionableGPUs(t *testing.T) {
	machines := []Machine{machine(t, "slot1@g", StateUnclaimed, 8192, `Cpus = 8; GPUs = 2; TotalSlotGPUs = 2; PartitionableSlot = true; SlotType = "Partitionable"`)}
	var jobs []Request
	for i := range 3 {
		jobs = append(jobs, job(t, "ag", 1, i, "alice", fmt.Sprintf("QDate = %d; RequestGPUs = 1; Requirements = TARGET.GPUs >= RequestGPUs", i)))
	}
	res := Negotiator{}.Negotiate(jobs, machines)
	if want := []string{"1.0->slot1@g", "1.1->slot1@g"}; !slices.Equal(pairs(res), want) {
		t.Errorf("matches %v, want %v", pairs(res), want)
	}
}

// TestNegotiatePartitionableAfterStatic: a request takes the static
// slots of its matchlist first, then carves partitionable ones.
func TestNegotiatePartitionableAfterStatic(t *testing.T) {
	machines := []Machine{machine(t, "slot1@s", StateUnclaimed, 1024, ""), pslot(t, "slot1@p", 2, 2048)}
	jobs := []Request{job(t, "ag", 1, 0, "alice", ""), job(t, "ag", 1, 1, "alice", ""), job(t, "ag", 1, 2, "alice", ""), job(t, "ag", 1, 3, "alice", "")}
	want := []string{"1.0->slot1@s", "1.1->slot1@p", "1.2->slot1@p"}
	if got := pairs(Negotiator{}.Negotiate(jobs, machines)); !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
}

func TestCollectorClaimConsumesPartitionable(t *testing.T) {
	c := NewCollector(newFakeClock())
	m := pslot(t, "slot1@a", 4, 4096)
	c.Advertise(TypeMachine, m.Name, m.Ad, time.Minute)
	r := job(t, "ag", 1, 0, "alice", "RequestCpus = 3; RequestMemory = 1000")
	c.Claim(matchOf(r, m))
	_, machines := c.Snapshot()
	if len(machines) != 1 {
		t.Fatalf("machines %v", machines)
	}
	ad := machines[0].Ad
	cpus, _ := ad.EvalInt("Cpus")
	mem, _ := ad.EvalInt("Memory")
	if state(ad) != StateUnclaimed || cpus != 1 || mem != 3096 {
		t.Errorf("after a match the partitionable slot is %s with %d CPUs, %d MiB; want Unclaimed, 1, 3096", state(ad), cpus, mem)
	}
}

// TestAnalyzePartitionableWhole: a job that fits a partitionable slot
// whose CPUs are all in use is not told it asks too much; one that
// asks more than the slot has in all is.
func TestAnalyzePartitionableWhole(t *testing.T) {
	busy := machine(t, "slot1@a", StateUnclaimed, 4096, `Cpus = 0; TotalSlotCpus = 4; TotalSlotMemory = 4096; PartitionableSlot = true;
		Requirements = TARGET.RequestCpus <= MY.Cpus`)
	req := "Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory"
	small := job(t, "ag", 1, 0, "alice", "RequestCpus = 1; "+req).Ad
	if a := Analyze(small, []*classad.ClassAd{busy.Ad}); a.RejectedByJob != 0 || a.RejectedByMachine != 0 || a.Available != 1 {
		t.Errorf("1-CPU job on a busy 4-CPU partitionable slot: %+v", a)
	}
	big := job(t, "ag", 1, 1, "alice", "RequestCpus = 5; "+req).Ad
	a := Analyze(big, []*classad.ClassAd{busy.Ad})
	if a.RejectedByJob != 1 {
		t.Fatalf("5-CPU job on a 4-CPU partitionable slot: %+v", a)
	}
	if b := a.Blame(); b < 0 || a.Conditions[b].Text != "TARGET.Cpus >= RequestCpus" {
		t.Errorf("blamed %d of %+v, want TARGET.Cpus >= RequestCpus", b, a.Conditions)
	}
}

// TestUsageWeighsDynamicSlots: the accountant charges a dynamic slot its
// CPUs and a static slot one.
func TestUsageWeighsDynamicSlots(t *testing.T) {
	machines := []Machine{
		machine(t, "slot1_1@a", StateClaimed, 1024, `RemoteOwner = "alice"; Cpus = 4; DynamicSlot = true`),
		machine(t, "slot1_2@a", StateClaimed, 1024, `RemoteOwner = "bob"; Cpus = 1; DynamicSlot = true`),
		machine(t, "slot2@b", StateClaimed, 1024, `RemoteOwner = "alice"; Cpus = 2`),
		pslot(t, "slot1@a", 0, 0),
	}
	got := usageOf(machines)
	if got["alice"] != 5 || got["bob"] != 1 || len(got) != 2 {
		t.Errorf("usage %v, want alice 5 (4 + 1), bob 1", got)
	}
}

// BenchmarkNegotiatePartitionable: 1,000 partitionable slots of 64 CPUs
// and 20,000 jobs of 1 to 16 CPUs in 200 requests, more than fit.
func BenchmarkNegotiatePartitionable(b *testing.B) {
	machines := make([]Machine, 1000)
	for i := range machines {
		machines[i] = pslot(b, fmt.Sprintf("slot1@host%04d", i), 64, 512<<10)
	}
	reqs := make([]Request, 200)
	for i := range reqs {
		r := job(b, "ag", i+1, 0, fmt.Sprintf("u%d", i%10), fmt.Sprintf("QDate = %d; RequestCpus = %d; RequestMemory = %d; Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory", i, 1+i%16, (1+i%64)<<10))
		r.JobIDs = make([]string, 100)
		for j := range r.JobIDs {
			r.JobIDs[j] = fmt.Sprintf("%d.%d", i+1, j)
		}
		reqs[i] = r
	}
	b.ReportAllocs()
	var res Result
	for b.Loop() {
		res = Negotiator{}.Negotiate(reqs, machines)
	}
	var cpus int64
	for _, m := range res.Matches {
		c, _ := m.Job.Ad.EvalInt("RequestCpus")
		cpus += c
	}
	b.ReportMetric(float64(len(res.Matches)), "matches")
	b.ReportMetric(100*float64(cpus)/float64(64*len(machines)), "%cores")
}

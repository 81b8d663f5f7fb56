package startd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/gpu"
	"harrier.dev/harrier/wire"
)

func TestParseShare(t *testing.T) {
	m := machine{cpus: 8, memoryMiB: 16384, diskKiB: 1000}
	for _, tt := range []struct {
		text string
		want resources
	}{
		{"", resources{2, 4096, 250, 0}}, // an even share of four slots
		{"cpus=4, memory=2048, disk=10%", resources{4, 2048, 100, 0}},
		{"cpus=1/2, mem=4G", resources{4, 4096, 250, 0}},
		{"50%", resources{4, 8192, 500, 0}},
		{"CPUS=3,RAM=25%,D=200", resources{3, 4096, 200, 0}},
	} {
		sh, err := parseShare(tt.text)
		if err != nil {
			t.Errorf("parseShare(%q): %v", tt.text, err)
			continue
		}
		if got := sh.of(m, 4); got != tt.want {
			t.Errorf("parseShare(%q) on 4 slots of %+v = %v, want %v", tt.text, m, got, tt.want)
		}
	}
	for _, bad := range []string{"cpus", "gpus=1", "cpus=-1", "memory=150%", "4", "cpus=2/1"} {
		if _, err := parseShare(bad); err == nil {
			t.Errorf("parseShare(%q) accepted", bad)
		}
	}
}

func TestPartitionableAds(t *testing.T) {
	c := adConfig{host: "exec1", policy: testPolicy(t, "true"), numSlots: 1}
	whole, _ := parseShare("100%")
	p := view{id: 1, slotID: 1, name: "slot1@exec1", kind: partitionable, share: whole, status: Status{Unclaimed, Idle},
		used: resources{3, 4000, 1 << 20, 0}, children: []resources{{1, 1000, 1 << 19, 0}, {2, 3000, 1 << 19, 0}}}
	ad := machineAd(c, testMachine, p, time.Unix(1200, 0))
	for name, want := range map[string]int64{
		"Cpus": 5, "Memory": 12000, "Disk": 1<<30 - 1<<20,
		"TotalSlotCpus": 8, "TotalSlotMemory": 16000, "TotalSlotDisk": 1 << 30,
		"NumDynamicSlots": 2, "SlotID": 1,
	} {
		if got, ok := ad.EvalInt(name); !ok || got != want {
			t.Errorf("partitionable %s = %d (%v), want %d", name, got, ok, want)
		}
	}
	if e, _ := ad.Lookup("ChildCpus"); e.String() != "{ 1,2 }" {
		t.Errorf("ChildCpus = %s, want each dynamic slot's, { 1,2 }", e)
	}
	if b, _ := ad.EvalBool("PartitionableSlot"); !b || evalString(ad, "SlotType") != "Partitionable" {
		t.Errorf("partitionable slot's ad lacks PartitionableSlot or SlotType: %s", ad)
	}

	d := view{id: 4, slotID: 1, name: "slot1_2@exec1", kind: dynamic, size: resources{2, 1024, 500, 0}, status: Status{Claimed, Busy}}
	ad = machineAd(c, testMachine, d, time.Unix(1200, 0))
	for name, want := range map[string]int64{"Cpus": 2, "Memory": 1024, "Disk": 500, "TotalSlotCpus": 2, "SlotID": 1} {
		if got, ok := ad.EvalInt(name); !ok || got != want {
			t.Errorf("dynamic %s = %d (%v), want %d", name, got, ok, want)
		}
	}
	if b, _ := ad.EvalBool("DynamicSlot"); !b || evalString(ad, "SlotType") != "Dynamic" {
		t.Errorf("dynamic slot's ad lacks DynamicSlot or SlotType: %s", ad)
	}
}

// sizedJob is a job ad requesting cpus CPUs and memory MiB.
func sizedJob(id int, cpus, memory int64) string {
	ad := classad.New()
	ad.SetString("MyType", "Job")
	ad.SetInt("ClusterId", int64(id))
	ad.SetInt("ProcId", 0)
	ad.SetString("Owner", "alice")
	ad.SetInt("RequestCpus", cpus)
	ad.SetInt("RequestMemory", memory)
	if err := ad.SetExpr("Requirements", "TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory"); err != nil {
		panic(err)
	}
	return ad.String()
}

// TestCarveAndReturn matches a 4-CPU partitionable slot: each match
// carves a dynamic slot of the job's size, the leftover is advertised at
// once, a match for more than is left is refused, and a released claim
// gives its resources back.
func TestCarveAndReturn(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) {
		c.NumCPUs, c.MemoryMiB = 4, 4096
		c.SlotTypes = []SlotType{{Count: 1, Share: "100%", Partitionable: true}}
	}, nil)
	ctx := t.Context()
	const pslot = "slot1@exec1"
	leftover := func(cpus, memory int64) {
		t.Helper()
		h.collector.waitFor(t, fmt.Sprintf("%s with %d CPUs left", pslot, cpus), func() bool {
			ad, err := classad.Parse(h.collector.latest[pslot])
			if err != nil {
				return false
			}
			c, _ := ad.EvalInt("Cpus")
			m, _ := ad.EvalInt("Memory")
			return c == cpus && m == memory
		})
	}
	ad := h.collector.waitStatus(t, pslot, Status{Unclaimed, Idle})
	if b, _ := ad.EvalBool("PartitionableSlot"); !b || adInt(t, ad, "Cpus") != 4 || adInt(t, ad, "TotalSlotCpus") != 4 {
		t.Fatalf("partitionable slot ad: %s", ad)
	}

	// Two matches carve slot1_1 and slot1_2; the slot has 1 CPU left.
	h.collector.mu.Lock()
	before := len(h.collector.order)
	h.collector.mu.Unlock()
	for i, claimID := range []string{"c1", "c2"} {
		if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: claimID, JobAd: sizedJob(i+1, int64(1+i), 1024)}); err != nil {
			t.Fatal(err)
		}
	}
	h.collector.waitStatus(t, "slot1_1@exec1", Status{Matched, Idle})
	h.collector.waitStatus(t, "slot1_2@exec1", Status{Matched, Idle})
	leftover(1, 2048)
	// The first dynamic slot's ad went before the partitionable slot's
	// that shows it carved (see Startd.ads).
	h.collector.mu.Lock()
	after := slices.Clone(h.collector.order[before:])
	h.collector.mu.Unlock()
	if len(after) == 0 || after[0] != "slot1_1@exec1" {
		t.Errorf("ads after the first match, in order: %v; want slot1_1@exec1's first", after)
	}

	// A match for more than is left is refused.
	_, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: "c3", JobAd: sizedJob(3, 2, 512)})
	wantCode(t, err, codes.FailedPrecondition)

	// The agent claims the partitionable slot it was told of and gets
	// the dynamic slot's ad.
	reply, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: pslot, ClaimId: "c2", JobAd: sizedJob(2, 2, 1024), Agent: "agent@submit"})
	if err != nil || !reply.Accepted {
		t.Fatalf("claim: %+v, %v", reply, err)
	}
	dad, err := classad.Parse(reply.MachineAd)
	if err != nil {
		t.Fatal(err)
	}
	if evalString(dad, "Name") != "slot1_2@exec1" || adInt(t, dad, "Cpus") != 2 || adInt(t, dad, "Memory") != 1024 || evalString(dad, "SlotType") != "Dynamic" {
		t.Errorf("claimed dynamic slot's ad: %s", dad)
	}
	h.collector.waitStatus(t, "slot1_2@exec1", Status{Claimed, Idle})
	// Released, the claim's resources return and its ad is withdrawn;
	// the unclaimed match's too.
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c2"}); err != nil {
		t.Fatal(err)
	}
	leftover(3, 3072)
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatal(err)
	}
	leftover(4, 4096)
	h.collector.waitFor(t, "dynamic slots withdrawn", func() bool {
		return h.collector.invalidated["slot1_1@exec1"] && h.collector.invalidated["slot1_2@exec1"]
	})

	// A 4-CPU job now fits.
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: "c4", JobAd: sizedJob(4, 4, 4096)}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, "slot1_3@exec1", Status{Matched, Idle})
	leftover(0, 0)
}

// TestCarveGPUs: a partitionable slot holding two GPUs carves one for
// each job that requests one, names it in the dynamic slot's ad
// (AssignedGPUs) and advertises the other as what it has left; a job that
// requests a GPU when none is left is refused, and a released claim's
// GPU returns.
func TestCarveGPUs(t *testing.T) {
	inv, err := gpu.Discover(context.Background(), gpu.Config{Method: gpu.Static,
		Static: `[Id = "GPU-a"; DevicePath = "/dev/ga"], [Id = "GPU-b"; DevicePath = "/dev/gb"]`})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(c *Config) {
		c.NumCPUs, c.MemoryMiB, c.GPUs = 4, 4096, inv
		c.SlotTypes = []SlotType{{Count: 1, Share: "100%", Partitionable: true}}
	}, nil)
	ctx := t.Context()
	const pslot = "slot1@exec1"
	gpuJob := func(id int, gpus int64) string {
		ad, err := classad.Parse(sizedJob(id, 1, 256))
		if err != nil {
			t.Fatal(err)
		}
		ad.SetInt("RequestGPUs", gpus)
		return ad.String()
	}
	gpusLeft := func(n int64, assigned string) {
		t.Helper()
		h.collector.waitFor(t, fmt.Sprintf("%s with %d GPUs left", pslot, n), func() bool {
			ad, err := classad.Parse(h.collector.latest[pslot])
			if err != nil {
				return false
			}
			g, _ := ad.EvalInt("GPUs")
			total, _ := ad.EvalInt("TotalSlotGPUs")
			a, _ := ad.EvalString("AssignedGPUs")
			return g == n && total == 2 && a == assigned
		})
	}
	h.collector.waitStatus(t, pslot, Status{Unclaimed, Idle})
	gpusLeft(2, "GPU-a,GPU-b")
	for i, claimID := range []string{"g1", "g2"} {
		if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: claimID, JobAd: gpuJob(i+1, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"slot1_1@exec1": "GPU-a", "slot1_2@exec1": "GPU-b"} {
		ad := h.collector.waitStatus(t, name, Status{Matched, Idle})
		if a := evalString(ad, "AssignedGPUs"); a != want || adInt(t, ad, "GPUs") != 1 {
			t.Errorf("%s: AssignedGPUs %q, GPUs %d; want %s", name, a, adInt(t, ad, "GPUs"), want)
		}
	}
	gpusLeft(0, "")
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: "g3", JobAd: gpuJob(3, 1)})
	wantCode(t, err, codes.FailedPrecondition)
	// A job without GPUs still fits, and gets none.
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: pslot, ClaimId: "c4", JobAd: gpuJob(4, 0)}); err != nil {
		t.Fatal(err)
	}
	if ad := h.collector.waitStatus(t, "slot1_3@exec1", Status{Matched, Idle}); adInt(t, ad, "GPUs") != 0 {
		t.Errorf("a dynamic slot without GPUs: %s", ad)
	}
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "g1"}); err != nil {
		t.Fatal(err)
	}
	gpusLeft(1, "GPU-a")
}

// TestPinCores: with AssignCPUAffinity each slot gets the lowest free
// cores, keeps them, and gives them back; a slot that finds too few runs
// unpinned.
func TestPinCores(t *testing.T) {
	s := &Startd{cores: make([]*slot, 4), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, b, c := newSlot(1, "h", time.Now()), newSlot(2, "h", time.Now()), newSlot(3, "h", time.Now())
	for _, step := range []struct {
		sl   *slot
		n    int64
		want string
	}{{a, 2, "0,1"}, {b, 1, "2"}, {a, 2, "0,1"}, {c, 2, ""}} {
		if got := s.pin(step.sl, step.n); got != step.want {
			t.Errorf("pin(%s, %d) = %q, want %q", step.sl.name, step.n, got, step.want)
		}
	}
	s.unpin(a)
	if got := s.pin(c, 2); got != "0,1" {
		t.Errorf("pin after unpin = %q, want 0,1", got)
	}
	if got := (&Startd{}).pin(a, 1); got != "" {
		t.Errorf("pin without affinity = %q", got)
	}
}

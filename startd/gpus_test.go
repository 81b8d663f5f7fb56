package startd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/gpu"
)

// TestMachineAdGPUs: three GPUs shared by two static slots, published as
// HTCondor's startd publishes them, and matched as submit's clauses ask.
func TestMachineAdGPUs(t *testing.T) {
	inv, err := gpu.Discover(context.Background(), gpu.Config{Method: gpu.Static, Static: `
		[Id = "GPU-0"; DevicePath = "/dev/g0"; Capability = 8.0; GlobalMemoryMb = 40960; DeviceName = "A100"],
		[Id = "GPU-1"; DevicePath = "/dev/g1"; Capability = 8.0; GlobalMemoryMb = 40960; DeviceName = "A100"],
		[Id = "GPU-2"; DevicePath = "/dev/g2"; Capability = 7.0; GlobalMemoryMb = 16384; DeviceName = "V100"]`})
	if err != nil {
		t.Fatal(err)
	}
	c := adConfig{host: "exec1", policy: testPolicy(t, "true"), numSlots: 2, gpus: shareGPUs(inv, 2)}
	ads := make([]*classad.ClassAd, 2)
	for i := range ads {
		ad := machineAd(c, testMachine, view{id: i + 1, name: "slot@exec1", status: Status{Unclaimed, Idle}}, time.Unix(1200, 0))
		if ads[i], err = classad.Parse(ad.String()); err != nil { // as the collector sees it
			t.Fatal(err)
		}
	}
	for i, want := range []struct {
		gpus     int64
		assigned string
	}{{2, "GPU-0,GPU-1"}, {1, "GPU-2"}} {
		ad := ads[i]
		if n, _ := ad.EvalInt("GPUs"); n != want.gpus {
			t.Errorf("slot %d: GPUs = %d, want %d", i+1, n, want.gpus)
		}
		if n, _ := ad.EvalInt("TotalGPUs"); n != 3 {
			t.Errorf("slot %d: TotalGPUs = %d", i+1, n)
		}
		if s, _ := ad.EvalString("AssignedGPUs"); s != want.assigned {
			t.Errorf("slot %d: AssignedGPUs = %q, want %q", i+1, s, want.assigned)
		}
		if s, _ := ad.EvalString("DetectedGPUs"); s != "GPU-0, GPU-1, GPU-2" {
			t.Errorf("slot %d: DetectedGPUs = %q", i+1, s)
		}
		if l, ok := ad.Eval("AvailableGPUs").ListValue(); !ok || int64(len(l)) != want.gpus {
			t.Errorf("slot %d: AvailableGPUs = %v", i+1, ad.Eval("AvailableGPUs"))
		}
	}
	if cap, _ := ads[0].EvalReal("GPUs_Capability"); cap != 8.0 {
		t.Errorf("slot 1: GPUs_Capability = %v", cap)
	}
	if name, _ := ads[1].EvalString("GPUs_DeviceName"); name != "V100" {
		t.Errorf("slot 2: GPUs_DeviceName = %q", name)
	}
	e, err := classad.ParseExpr(`GPUs_GPU_2.GlobalMemoryMb`)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := ads[1].EvalExpr(e, nil).IntValue(); m != 16384 {
		t.Errorf("slot 2: GPUs_GPU_2.GlobalMemoryMb = %v", ads[1].EvalExpr(e, nil))
	}
	if g, dev := c.gpus.spec(c.gpus.of(2)); len(g) != 1 || g[0].Path != "/dev/g2" || g[0].ID != "GPU-2" || len(dev) != 0 {
		t.Errorf("slot 2's starter is given %+v %v", g, dev)
	}

	none := machineAd(adConfig{host: "exec1", policy: testPolicy(t, "true")}, testMachine, view{id: 1}, time.Unix(1200, 0))
	for _, name := range []string{"GPUs", "TotalGPUs", "DetectedGPUs", "AssignedGPUs"} {
		if _, ok := none.Lookup(name); ok {
			t.Errorf("a machine without GPUs publishes %s", name)
		}
	}
}

// BenchmarkMachineAdGPUs builds and prints a slot's ad, as every
// advertisement does, on a machine without GPUs and with eight; and
// matches a plain job and a GPU job (Requirements as submit writes them)
// against the eight-GPU slot, as the negotiator does.
func BenchmarkMachineAdGPUs(b *testing.B) {
	var recs []string
	for i := range 8 {
		recs = append(recs, fmt.Sprintf(`[Id = "GPU-%08x"; DevicePath = "/dev/nvidia%d"; Capability = 8.0; GlobalMemoryMb = 40960; DeviceName = "NVIDIA A100-SXM4-40GB"; ClockMhz = 1410]`, i, i))
	}
	inv, err := gpu.Discover(context.Background(), gpu.Config{Method: gpu.Static, Static: strings.Join(recs, ", ")})
	if err != nil {
		b.Fatal(err)
	}
	base := adConfig{host: "exec1", addr: "10.0.0.2:9000", policy: testPolicy(b, "true"), numSlots: 1, version: "v1"}
	withGPUs := base
	withGPUs.gpus = shareGPUs(inv, 1)
	v := view{id: 1, name: "slot1@exec1", status: Status{Unclaimed, Idle}}
	for _, bc := range []struct {
		name string
		c    adConfig
	}{{"none", base}, {"8gpus", withGPUs}} {
		b.Run("ad/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = machineAd(bc.c, testMachine, v, time.Unix(1200, 0)).String()
			}
		})
	}
	machine, err := classad.Parse(machineAd(withGPUs, testMachine, v, time.Unix(1200, 0)).String())
	if err != nil {
		b.Fatal(err)
	}
	common := `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)`
	for _, jc := range []struct{ name, req string }{
		{"plain", common},
		{"gpu", common + ` && (TARGET.GPUs >= RequestGPUs) && ((TARGET.GPUs_Capability >= 8.0) && TARGET.GPUs_GlobalMemoryMb >= 20480)`},
	} {
		job, err := classad.Parse(fmt.Sprintf(`[MyType = "Job"; RequestCpus = 1; RequestMemory = 128; RequestDisk = 1024; RequestGPUs = 1; Requirements = %s]`, jc.req))
		if err != nil {
			b.Fatal(err)
		}
		if !classad.Match(job, machine) {
			b.Fatalf("%s job does not match", jc.name)
		}
		b.Run("match/"+jc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				classad.Match(job, machine)
			}
		})
	}
}

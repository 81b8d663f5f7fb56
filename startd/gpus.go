package startd

import (
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/gpu"
	"harrier.dev/harrier/starter"
)

// gpuShare is the machine's GPUs and each static slot's share of them,
// fixed when the startd starts. It is only read.
type gpuShare struct {
	inv   gpu.Inventory
	slots [][]gpu.Device // by SlotID-1
}

func shareGPUs(inv gpu.Inventory, numSlots int) gpuShare {
	return gpuShare{inv: inv, slots: gpu.Share(inv.Devices, max(numSlots, 1))}
}

// of returns the GPUs of slot id (from 1).
func (g gpuShare) of(id int) []gpu.Device {
	if id < 1 || id > len(g.slots) {
		return nil
	}
	return g.slots[id-1]
}

// publish adds the GPU attributes HTCondor's startd publishes to slot
// id's ad: GPUs (the slot's), TotalGPUs, DetectedGPUs, AssignedGPUs,
// each device's properties as a nested ad (GPUs_<id>) listed in
// AvailableGPUs, and the properties the slot's devices share as
// GPUs_<name> (GPUs_Capability, GPUs_GlobalMemoryMb, GPUs_DeviceName,
// ...), which require_gpus is matched against. A machine without GPUs
// publishes none of them.
func (g gpuShare) publish(ad *classad.ClassAd, id int) {
	if len(g.inv.Devices) == 0 {
		return
	}
	mine := g.of(id)
	ad.SetInt("GPUs", int64(len(mine)))
	ad.SetInt("TotalSlotGPUs", int64(len(mine)))
	ad.SetInt("TotalGPUs", int64(len(g.inv.Devices)))
	ad.SetString("DetectedGPUs", strings.Join(gpu.IDs(g.inv.Devices), ", "))
	ad.SetString("AssignedGPUs", strings.Join(gpu.IDs(mine), ","))
	for name, v := range gpu.Common(mine) {
		ad.SetValue("GPUs_"+name, v)
	}
	refs := make([]string, len(mine))
	for i, d := range mine {
		props := d.Props.Copy()
		props.SetString("Id", d.ID)
		ad.SetValue(gpu.AdName(d.ID), classad.AdValue(props))
		refs[i] = gpu.AdName(d.ID)
	}
	if e, err := classad.ParseExpr("{" + strings.Join(refs, ", ") + "}"); err == nil {
		ad.Set("AvailableGPUs", e)
	}
}

// spec returns what the starter of slot id is told of its GPUs.
func (g gpuShare) spec(id int) ([]starter.GPU, []string) {
	mine := g.of(id)
	if len(mine) == 0 {
		return nil, nil
	}
	out := make([]starter.GPU, len(mine))
	for i, d := range mine {
		out[i] = starter.GPU{ID: d.ID, CUDAName: d.CUDAName(), Path: d.Path}
	}
	return out, g.inv.Shared
}

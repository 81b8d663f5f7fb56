package startd

import (
	"maps"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/gpu"
	"harrier.dev/harrier/starter"
)

// gpuShare is the machine's GPUs, each static slot's share of them and
// the attributes each slot's ad carries for them, fixed when the startd
// starts. It is only read: the attributes' expressions are shared by
// every ad built from it.
type gpuShare struct {
	inv   gpu.Inventory
	slots [][]gpu.Device // by SlotID-1
	attrs [][]gpuAttr    // by SlotID-1
}

type gpuAttr struct {
	name string
	e    classad.Expr
}

func shareGPUs(inv gpu.Inventory, numSlots int) gpuShare {
	g := gpuShare{inv: inv, slots: gpu.Share(inv.Devices, max(numSlots, 1))}
	if len(inv.Devices) > 0 {
		for _, mine := range g.slots {
			g.attrs = append(g.attrs, slotGPUAttrs(inv.Devices, mine))
		}
	}
	return g
}

// of returns the GPUs of slot id (from 1).
func (g gpuShare) of(id int) []gpu.Device {
	if id < 1 || id > len(g.slots) {
		return nil
	}
	return g.slots[id-1]
}

// publish adds the GPU attributes of the slot of v to its ad (see
// slotGPUAttrs): a static slot's, and an untouched partitionable slot's,
// made when the startd started; a dynamic slot's, made when it was
// carved; a partitionable slot's with dynamic slots holding some of its
// devices, made now of those it has left. A machine without GPUs
// publishes none.
func (g gpuShare) publish(ad *classad.ClassAd, v view) {
	attrs := v.gpuAttrs
	switch {
	case len(g.inv.Devices) == 0:
		return
	case v.kind == partitionable && len(v.heldGPUs) > 0:
		attrs = slotGPUAttrs(g.inv.Devices, gpuFree(v.gpus, v.heldGPUs))
	case v.kind != dynamic && v.id >= 1 && v.id <= len(g.attrs):
		attrs = g.attrs[v.id-1]
	}
	for _, a := range attrs {
		ad.Set(a.name, a.e)
	}
	if v.kind == partitionable {
		ad.SetInt("TotalSlotGPUs", int64(len(v.gpus)))
	}
}

// gpuFree returns the devices of all that held does not name.
func gpuFree(all, held []gpu.Device) []gpu.Device {
	var free []gpu.Device
	for _, d := range all {
		if !slices.ContainsFunc(held, func(h gpu.Device) bool { return h.ID == d.ID }) {
			free = append(free, d)
		}
	}
	return free
}

// slotGPUAttrs are the GPU attributes HTCondor's startd publishes for a
// slot holding mine of the machine's all: GPUs (the slot's), TotalGPUs,
// DetectedGPUs, AssignedGPUs, each device's properties as a nested ad
// (GPUs_<id>) listed in AvailableGPUs, and the properties the slot's
// devices share as GPUs_<name> (GPUs_Capability, GPUs_GlobalMemoryMb,
// GPUs_DeviceName, ...), which require_gpus is matched against.
func slotGPUAttrs(all, mine []gpu.Device) []gpuAttr {
	lit := func(name string, v classad.Value) gpuAttr { return gpuAttr{name, classad.Literal(v)} }
	attrs := []gpuAttr{
		lit("GPUs", classad.Int(int64(len(mine)))),
		lit("TotalSlotGPUs", classad.Int(int64(len(mine)))),
		lit("TotalGPUs", classad.Int(int64(len(all)))),
		lit("DetectedGPUs", classad.String(strings.Join(gpu.IDs(all), ", "))),
		lit("AssignedGPUs", classad.String(strings.Join(gpu.IDs(mine), ","))),
	}
	common := gpu.Common(mine)
	for _, name := range slices.Sorted(maps.Keys(common)) {
		attrs = append(attrs, lit("GPUs_"+name, common[name]))
	}
	refs := make([]string, len(mine))
	for i, d := range mine {
		props := d.Props.Copy()
		props.SetString("Id", d.ID)
		attrs = append(attrs, lit(gpu.AdName(d.ID), classad.AdValue(props)))
		refs[i] = gpu.AdName(d.ID)
	}
	// A list of references to the nested ads, as HTCondor writes it.
	if e, err := classad.ParseExpr("{" + strings.Join(refs, ", ") + "}"); err == nil {
		attrs = append(attrs, gpuAttr{"AvailableGPUs", e})
	}
	return attrs
}

// spec returns what the starter of a slot holding mine is told of its
// GPUs.
func (g gpuShare) spec(mine []gpu.Device) ([]starter.GPU, []string) {
	if len(mine) == 0 {
		return nil, nil
	}
	out := make([]starter.GPU, len(mine))
	for i, d := range mine {
		out[i] = starter.GPU{ID: d.ID, CUDAName: d.CUDAName(), Path: d.Path}
	}
	return out, g.inv.Shared
}

// Package gpu finds an execute machine's GPUs and describes them as
// HTCondor's startd does: each device by an identifier (AssignedGPUs,
// DetectedGPUs), the device node a job that holds it needs, and its
// properties (Capability, GlobalMemoryMb, DeviceName, ...) as a ClassAd.
//
// Discover finds them in one of three ways (Method): NVIDIA's device
// nodes (/dev/nvidia<N>) described by nvidia-smi when it is installed; a
// static list the administrator writes, in ClassAd syntax, which is also
// how tests describe fake devices backed by device nodes of their own;
// or none. It only reads: nothing is assigned or opened here.
package gpu

import (
	"fmt"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// Device is one GPU.
type Device struct {
	// ID names the device in the machine's ads and the job's
	// environment: "GPU-" and the start of its UUID where nvidia-smi
	// tells it, "CUDA<index>" otherwise, or what the administrator wrote.
	ID string
	// Index is the CUDA device index, or -1 if unknown.
	Index int
	// Path is the device node a job using the device must open.
	Path string
	// Props are the device's properties by HTCondor's names
	// (Capability, GlobalMemoryMb, DeviceName, ClockMhz, ...), without
	// Id; never nil.
	Props *classad.ClassAd
}

// CUDAName is what CUDA_VISIBLE_DEVICES calls the device: its UUID form
// when the ID is one, else its index, else its ID.
func (d Device) CUDAName() string {
	if strings.HasPrefix(d.ID, "GPU-") || d.Index < 0 {
		return d.ID
	}
	return strconv.Itoa(d.Index)
}

// Inventory is what Discover found.
type Inventory struct {
	Devices []Device
	// Shared are device nodes every job holding any GPU needs as well
	// (NVIDIA's control and unified-memory nodes).
	Shared []string
}

// IDs lists the devices' IDs in order.
func IDs(ds []Device) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

// Share divides the devices among n static slots as evenly as they go,
// in order: each slot gets len/n of them and the first len%n one more.
// Slot i (from 0) gets Share(...)[i].
func Share(ds []Device, n int) [][]Device {
	out := make([][]Device, max(n, 0))
	next := 0
	for i := range out {
		k := len(ds) / n
		if i < len(ds)%n {
			k++
		}
		out[i] = ds[next : next+k : next+k]
		next += k
	}
	return out
}

// AdName is the name of the attribute holding the device's properties as
// a nested ad in a slot's ad (HTCondor's GPUs_GPU_<id>): the ID with what
// is not a letter, digit or _ replaced by _, after "GPUs_".
func AdName(id string) string {
	return "GPUs_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, id)
}

// Common returns the properties every device of ds has with the same
// value, as HTCondor publishes them for a slot: GPUs_<Name> in the slot's
// ad. It is empty without devices.
func Common(ds []Device) map[string]classad.Value {
	out := map[string]classad.Value{}
	if len(ds) == 0 {
		return out
	}
	for _, name := range ds[0].Props.Names() {
		v := ds[0].Props.Eval(name)
		same := true
		for _, d := range ds[1:] {
			// The same value prints the same: =?= without an evaluation.
			if w := d.Props.Eval(name); w.Kind() != v.Kind() || w.String() != v.String() {
				same = false
				break
			}
		}
		if same {
			out[name] = v
		}
	}
	return out
}

// checkIDs refuses empty and repeated device IDs.
func checkIDs(ds []Device) error {
	seen := map[string]bool{}
	for _, d := range ds {
		if d.ID == "" {
			return fmt.Errorf("a GPU without an Id")
		}
		if seen[d.ID] {
			return fmt.Errorf("GPU %s listed twice", d.ID)
		}
		seen[d.ID] = true
	}
	return nil
}

package starter

import (
	"slices"
	"strings"
)

// GPU is one of the slot's GPUs, as the startd hands it to the starter.
type GPU struct {
	// ID is the device's name in the machine's ads (AssignedGPUs).
	ID string `json:"id"`
	// CUDAName is what CUDA_VISIBLE_DEVICES calls it.
	CUDAName string `json:"cuda_name"`
	// Path is its device node.
	Path string `json:"path"`
}

// giveGPUs hands the slot's GPUs to the task: their device nodes, and
// those every GPU job needs (shared), and the environment HTCondor sets
// (CUDA_VISIBLE_DEVICES, _CONDOR_AssignedGPUs), over the job's own. A
// slot without GPUs changes nothing: in a container its job sees no
// GPU at all.
func giveGPUs(t *Task, gpus []GPU, shared []string) {
	if len(gpus) == 0 {
		return
	}
	ids, cuda := make([]string, len(gpus)), make([]string, len(gpus))
	for i, g := range gpus {
		ids[i], cuda[i] = g.ID, g.CUDAName
		t.Devices = append(t.Devices, g.Path)
	}
	t.Devices = append(t.Devices, shared...)
	// Replaced, not shadowed: getenv finds the first of two settings.
	t.Env = slices.DeleteFunc(t.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") || strings.HasPrefix(kv, "_CONDOR_AssignedGPUs=")
	})
	t.Env = append(t.Env, "CUDA_VISIBLE_DEVICES="+strings.Join(cuda, ","), "_CONDOR_AssignedGPUs="+strings.Join(ids, ","))
}

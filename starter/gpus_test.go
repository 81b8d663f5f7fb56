package starter

import (
	"slices"
	"testing"
)

func TestGiveGPUs(t *testing.T) {
	task := &Task{Env: []string{"CUDA_VISIBLE_DEVICES=all", "A=1"}}
	giveGPUs(task, []GPU{{ID: "GPU-c4a646d7", CUDAName: "GPU-c4a646d7", Path: "/dev/nvidia3"}, {ID: "CUDA1", CUDAName: "1", Path: "/dev/nvidia1"}},
		[]string{"/dev/nvidiactl"})
	if want := []string{"/dev/nvidia3", "/dev/nvidia1", "/dev/nvidiactl"}; !slices.Equal(task.Devices, want) {
		t.Errorf("devices %v, want %v", task.Devices, want)
	}
	if want := []string{"A=1", "CUDA_VISIBLE_DEVICES=GPU-c4a646d7,1", "_CONDOR_AssignedGPUs=GPU-c4a646d7,CUDA1"}; !slices.Equal(task.Env, want) {
		t.Errorf("env %v, want %v", task.Env, want)
	}
	none := &Task{Env: []string{"A=1"}}
	giveGPUs(none, nil, []string{"/dev/nvidiactl"})
	if len(none.Devices) != 0 || len(none.Env) != 1 {
		t.Errorf("a slot without GPUs gave %v %v", none.Devices, none.Env)
	}
}

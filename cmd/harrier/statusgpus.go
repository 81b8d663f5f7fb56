package main

import (
	"fmt"

	"harrier.dev/harrier/classad"
)

// gpusConstraint keeps condor_status -gpus to slots of machines with GPUs.
const gpusConstraint = "TotalGPUs > 0"

// gpuColumns are condor_status -gpus's: each slot's GPUs, the memory and
// name its devices share, and whose job uses them.
func gpuColumns() []column {
	return []column{stringColumn("Name", "Name"), stateColumn(), stringColumn("User", "RemoteOwner"),
		intColumn("GPUs", "GPUs"),
		{"GPU-Memory", func(ad *classad.ClassAd, _ int64) string {
			if mb, ok := ad.EvalReal("GPUs_GlobalMemoryMb"); ok {
				return fmt.Sprintf("%.1f GB", mb/1024)
			}
			return ""
		}},
		stringColumn("GPU-Name", "GPUs_DeviceName"), stringColumn("AssignedGPUs", "AssignedGPUs")}
}

// stateColumn is the slot's state and activity as condor_status's ST
// column writes them (stateLetters).
func stateColumn() column {
	return column{"ST", func(ad *classad.ClassAd, _ int64) string {
		st, _ := ad.EvalString("State")
		act, _ := ad.EvalString("Activity")
		return stateLetters(st, act)
	}}
}

package checkpoint

import (
	"reflect"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"

	"harrier.dev/harrier/platform"
)

// The attributes of the platform: a machine advertises the platform it
// restores checkpoints on as AttrPlatform, and a job records the
// platform of the machine its last checkpoint was taken on as
// AttrLastPlatform, as in HTCondor.
const (
	AttrPlatform     = "CheckpointPlatform"
	AttrLastPlatform = "LastCheckpointPlatform"
)

// Platform names what a checkpoint taken on this machine asks of the
// machine that restores it, as HTCondor's CheckpointPlatform does: the
// operating system, the architecture and the processor's features that
// programs may use. A restored program goes on with the instructions it
// chose when it started (a library picks its AVX2 copy once), and CRIU
// refuses a processor whose register state lacks what the image holds;
// a machine with another platform string cannot be trusted to restore.
// It is opaque: machines compare it whole.
func Platform() string {
	var features any
	switch runtime.GOARCH {
	case "amd64":
		features = &cpu.X86
	case "arm64":
		features = &cpu.ARM64
	}
	parts := []string{platform.OpSys(), platform.Arch(runtime.GOARCH)}
	if features != nil {
		// Every HasX field the cpu package knows, in its order: those set
		// are the features programs may use here.
		v := reflect.ValueOf(features).Elem()
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if name, ok := strings.CutPrefix(f.Name, "Has"); ok && f.Type.Kind() == reflect.Bool && v.Field(i).Bool() {
				parts = append(parts, strings.ToLower(name))
			}
		}
	}
	return strings.Join(parts, " ")
}

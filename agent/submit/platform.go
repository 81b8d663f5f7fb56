package submit

import (
	"runtime"
	"strings"
)

// htcondorArch maps Go's architecture names to the Arch values machines
// advertise, which follow HTCondor.
var htcondorArch = map[string]string{
	"amd64": "X86_64", "arm64": "aarch64", "386": "INTEL", "ppc64le": "ppc64le", "s390x": "s390x",
}

// platform returns the Arch and OpSys of this machine in HTCondor's terms.
func platform() (arch, opsys string) {
	arch, ok := htcondorArch[runtime.GOARCH]
	if !ok {
		arch = runtime.GOARCH
	}
	return arch, strings.ToUpper(runtime.GOOS)
}

package submit

import (
	"path/filepath"
	"runtime"
	"strconv"
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

// presetMacros are the variables condor_submit defines before it reads a
// description, by lower-case name: ARCH, OPSYS, IsLinux, IsWindows and
// SUBMIT_FILE (the description's absolute path; file is relative to dir).
func presetMacros(dir, file string) map[string]string {
	arch, opsys := platform()
	m := map[string]string{
		"arch": arch, "opsys": opsys,
		"islinux": strconv.FormatBool(opsys == "LINUX"), "iswindows": "false",
	}
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, filepath.Base(file))
		}
		m["submit_file"] = filepath.Clean(file)
	}
	return m
}

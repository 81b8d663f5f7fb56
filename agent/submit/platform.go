package submit

import (
	"path/filepath"
	"runtime"
	"strconv"

	"harrier.dev/harrier/platform"
)

// submitPlatform returns the Arch and OpSys of this machine in HTCondor's
// terms.
func submitPlatform() (arch, opsys string) {
	return platform.Arch(runtime.GOARCH), platform.OpSys()
}

// presetMacros are the variables condor_submit defines before it reads a
// description, by lower-case name: ARCH, OPSYS, OPSYSANDVER,
// OPSYSMAJORVER, OPSYSVER, IsLinux, IsWindows and SUBMIT_FILE (the
// description's absolute path; file is relative to dir).
func presetMacros(dir, file string) map[string]string {
	arch, opsys := submitPlatform()
	rel := platform.ReadRelease("/etc/os-release")
	m := map[string]string{
		"arch": arch, "opsys": opsys,
		"opsysandver": rel.AndVer, "opsysmajorver": strconv.Itoa(rel.MajorVer), "opsysver": strconv.Itoa(rel.Ver),
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

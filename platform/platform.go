// Package platform names the machine's system as HTCondor does: its Arch
// (X86_64), OpSys (LINUX) and, from /etc/os-release, OpSysAndVer
// (Debian12), OpSysMajorVer (12) and OpSysVer (1204). The startd
// advertises them, and submit offers them as macros ($(ARCH),
// $(OPSYSANDVER), ...).
package platform

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Arch is HTCondor's name of the architecture Go calls goarch.
func Arch(goarch string) string {
	switch goarch {
	case "amd64":
		return "X86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "INTEL"
	case "ppc64le", "s390x":
		return goarch
	}
	return strings.ToUpper(goarch)
}

// OpSys is HTCondor's name of this machine's operating system.
func OpSys() string { return strings.ToUpper(runtime.GOOS) }

// Release is an operating system's name and version, as HTCondor's
// OpSysAndVer ("Debian12"), OpSysMajorVer (12) and OpSysVer (major times
// 100 plus minor: 1204).
type Release struct {
	AndVer   string
	MajorVer int
	Ver      int
}

// ReadRelease reads the os-release file at path; one that cannot be read
// is "LINUX", version 0.
func ReadRelease(path string) Release {
	b, err := os.ReadFile(path)
	if err != nil {
		return Release{AndVer: "LINUX"}
	}
	return ParseRelease(b)
}

// ParseRelease turns ID=debian and VERSION_ID="12.4" into Debian12, 12
// and 1204.
func ParseRelease(b []byte) Release {
	var id, ver string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			ver = v
		}
	}
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, id)
	digits := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
	}
	majorText, minorText, _ := strings.Cut(ver, ".")
	majorText, minorText = digits(majorText), digits(minorText)
	if id == "" {
		return Release{AndVer: "LINUX"}
	}
	r := Release{AndVer: strings.ToUpper(id[:1]) + id[1:] + majorText}
	if len(majorText) <= 6 {
		r.MajorVer, _ = strconv.Atoi(majorText)
	}
	minor := 0
	if len(minorText) <= 2 {
		minor, _ = strconv.Atoi(minorText)
	}
	r.Ver = r.MajorVer*100 + minor
	return r
}

package startd

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/imagecache"
)

// machine is one measurement of the whole execute machine; slots get an
// even share of its CPUs, memory and disk.
type machine struct {
	cpus      int
	memoryMiB int64
	diskKiB   int64   // free in the execute directory
	loadAvg   float64 // the kernel's one-minute load average (TotalLoadAvg)
	// keyboardIdle is the time since anyone used a terminal or the
	// console; consoleIdle since anyone used the console.
	keyboardIdle time.Duration
	consoleIdle  time.Duration
	// condorLoads is the load of each slot's job (by slot id), from the
	// startd's load meter; absent means zero.
	condorLoads map[int]float64
	arch        string
	opSysAndVer string
	// cachedImages are the names of the container images in the
	// machine's cache, most recently used first (CachedImages).
	cachedImages []string
}

// maxCachedImages bounds the image names a machine advertises: enough
// for the images a site's jobs use at once, few enough to keep the ad
// small.
const maxCachedImages = 32

// measurer measures the machine. The startd calls it before every ad it
// sends and before it accepts a claim.
type measurer func() (machine, error)

// measureHost returns a measurer for this host that reports free disk in
// executeDir and idle times from im.
func measureHost(executeDir string, im *idleMeter) measurer {
	opSysAndVer := readOpSysAndVer("/etc/os-release")
	return func() (machine, error) {
		m := machine{cpus: runtime.NumCPU(), arch: archName(runtime.GOARCH), opSysAndVer: opSysAndVer}
		var si syscall.Sysinfo_t
		if err := syscall.Sysinfo(&si); err != nil {
			return m, fmt.Errorf("sysinfo: %w", err)
		}
		m.memoryMiB = int64(si.Totalram) * int64(si.Unit) >> 20
		var st syscall.Statfs_t
		if err := syscall.Statfs(executeDir, &st); err != nil {
			return m, fmt.Errorf("statfs %s: %w", executeDir, err)
		}
		m.diskKiB = int64(st.Bavail) * st.Bsize >> 10
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return m, fmt.Errorf("read load average: %w", err)
		}
		if m.loadAvg, err = parseLoadAvg(b); err != nil {
			return m, err
		}
		uptime := time.Duration(si.Uptime) * time.Second
		m.keyboardIdle, m.consoleIdle = im.measure(time.Now(), uptime)
		// Advertised for preference only: a cache not made yet, or one
		// changing under the listing, advertises nothing this time.
		m.cachedImages, _ = imagecache.Names(imagecache.InExecuteDir(executeDir), maxCachedImages)
		return m, nil
	}
}

// parseLoadAvg returns the one-minute load average from /proc/loadavg.
func parseLoadAvg(b []byte) (float64, error) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, fmt.Errorf("parse /proc/loadavg: empty")
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	// !(v >= 0) also rejects NaN.
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("parse /proc/loadavg: bad load %q", f[0])
	}
	return v, nil
}

// archName maps GOARCH to the Arch values HTCondor advertises.
func archName(goarch string) string {
	switch goarch {
	case "amd64":
		return "X86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "INTEL"
	}
	return strings.ToUpper(goarch)
}

// readOpSysAndVer returns the HTCondor-style OpSysAndVer ("Debian12") from
// an os-release file, or "LINUX" if it cannot be read.
func readOpSysAndVer(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "LINUX"
	}
	return parseOSRelease(b)
}

// parseOSRelease turns ID=debian and VERSION_ID="12.4" into "Debian12".
func parseOSRelease(b []byte) string {
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
			ver, _, _ = strings.Cut(v, ".")
		}
	}
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, id)
	ver = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, ver)
	if id == "" {
		return "LINUX"
	}
	return strings.ToUpper(id[:1]) + id[1:] + ver
}

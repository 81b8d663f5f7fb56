package startd

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"harrier.dev/harrier/imagecache"
	"harrier.dev/harrier/platform"
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
	opSysAndVer := platform.ReadRelease("/etc/os-release").AndVer
	return func() (machine, error) {
		m := machine{cpus: runtime.NumCPU(), arch: platform.Arch(runtime.GOARCH), opSysAndVer: opSysAndVer}
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

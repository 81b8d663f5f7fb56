package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups"
	// Registers the device-rule writer the cgroup managers need.
	_ "github.com/opencontainers/cgroups/devices"
	devcfg "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"golang.org/x/sys/unix"
)

// Paths of the container's /proc and /sys that are hidden or read-only,
// as in runc's default configuration.
var (
	maskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list",
		"/proc/timer_stats", "/sys/devices/virtual/powercap", "/sys/firmware",
	}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	// rootCaps is what a job running as root (only if allowed) keeps;
	// a non-root job gets no capabilities at all.
	rootCaps = []string{
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
		"CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE",
	}
)

// JobScratchDir is where a job sees its scratch directory
// (Task.ScratchDir) in its container: the same place on every machine,
// as a checkpointed job must find its files where it left them wherever
// it is restored. The host's own /srv is not shown.
const JobScratchDir = "/srv"

// ownMounts are the top-level directories the container makes for
// itself, or binds a job's directory at, rather than binding the host's.
var ownMounts = []string{"/proc", "/dev", "/sys", "/tmp", JobScratchDir}

// hostSystemDirs are the host's top-level directories that a container
// on the host root shows as they are: a job's directory below one of them
// is shown at its path there, which must be on the execute machine too.
var hostSystemDirs = []string{"/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/run", "/sbin", "/usr", "/var"}

// dirTop is the directory of a container on the host root that holds the
// job's directory dir where the machine cannot show it at its path to
// the job's user u (see reachableBy), made the container's own: a small
// tmpfs with nothing in it but the path down to dir, at the top-level
// directory of dir (/home for /home/alice/run). A user's directory on
// the submit machine is seldom on the execute machine, whose root the
// container cannot write to make it, and a home directory is often
// closed to the slot's user. The top-level directory, rather than the
// first missing or closed one, so that a checkpoint taken here restores
// on another machine that lacks more of the path. Where the machine has
// the path open to u (the same machine, a shared file system), the job
// sees the machine's directories around it as before. "" if dir needs
// none: it is reachable, one of the container's own mounts or below
// one, a top-level directory itself, or below one of hostSystemDirs.
func dirTop(dir string, u identity) string {
	if under(dir, ownMounts) {
		return ""
	}
	top, rest, _ := strings.Cut(strings.TrimPrefix(dir, "/"), "/")
	if top == "" || rest == "" || slices.Contains(hostSystemDirs, "/"+top) || reachableBy(dir, u) {
		return ""
	}
	return "/" + top
}

// reachableBy reports whether dir is a directory of this machine that
// the user u may reach: every directory above it searchable by u.
func reachableBy(dir string, u identity) bool {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err != nil || !searchableBy(st, u) {
			return false
		}
		if p == "/" {
			break
		}
	}
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// spec is what one job's container needs, decided before it is made.
type spec struct {
	id, hostname string
	cgroupParent string
	user         identity
	scratch      string // the host directory bound at JobScratchDir
	dir          string // the job's working directory, in the container
	dirSource    string // the host directory bound at dir; none if dir is in the scratch directory
	dirTop       string // the container's own directory holding dir (see dirTop); none: dir is the host's
	cwd          string // where the job starts: dir, or JobScratchDir (Task.InScratch)
	rootfs       string // see hostRoot (or prepareRootfs), or the job's image root (mountImageRoot)
	// root is the overlay that is the root when it is the job's own
	// image (writable); nil: the machine's root, read-only.
	root        *imageRoot
	hostDirs    []string // the host's top-level directories not in rootfs, bound read-only
	memoryBytes int64
	noSwap      bool // the memory limit covers swap too
	cpuShares   uint64
	cpuQuota    int64  // microseconds per cpuPeriod; 0: none
	cpuset      string // the cores the job may run on ("2-3"); empty: any
	pidsLimit   int64
	devices     []*devcfg.Device // the job's own devices (Task.Devices)
	rlimits     []configs.Rlimit // the job's own (Task.Rlimits)
	criuLabel   string           // see checkpoint.ConfigFileLabel
}

// release undoes what prepare made for a container that is not to be:
// a job's image root.
func (s spec) release() {
	if s.root != nil {
		_ = s.root.unmount()
	}
}

// cpuPeriod is the CFS period of a job's CPU quota, the kernel's own
// default. It is written only with a quota: a write of the period, even
// of the value a new cgroup already has, makes the kernel revisit the
// bandwidth of the group on every CPU, which cost each job more than all
// its other limits together.
const cpuPeriod = 100000

// containerConfig builds the libcontainer configuration of a job.
func containerConfig(s spec) *configs.Config {
	devices := make([]*devcfg.Rule, 0, len(specconv.AllowedDevices))
	for _, d := range specconv.AllowedDevices {
		devices = append(devices, &d.Rule)
	}
	for _, d := range s.devices {
		devices = append(devices, &d.Rule)
	}
	caps := &configs.Capabilities{}
	if s.user.uid == 0 {
		caps = &configs.Capabilities{Bounding: rootCaps, Effective: rootCaps, Permitted: rootCaps}
	}
	pids := s.pidsLimit
	var swap int64 // 0: not set
	if s.noSwap {
		swap = s.memoryBytes
	}
	var period uint64 // 0: not written (see cpuPeriod)
	if s.cpuQuota != 0 {
		period = cpuPeriod
	}
	cfg := &configs.Config{
		// The host's root file system, read-only (hostRoot): programs
		// find their libraries. A job's own
		// image may be written to, as Docker allows: the writes go to its
		// overlay's upper directory in its scratch directory.
		Labels:          []string{s.criuLabel},
		Rootfs:          s.rootfs,
		Readonlyfs:      s.root == nil,
		Hostname:        s.hostname,
		NoNewPrivileges: true,
		Capabilities:    caps,
		Namespaces: configs.Namespaces{
			{Type: configs.NEWNS}, {Type: configs.NEWUTS}, {Type: configs.NEWIPC},
			{Type: configs.NEWPID}, {Type: configs.NEWNET},
		},
		Cgroups: &cgroups.Cgroup{
			Name:   s.id,
			Parent: s.cgroupParent,
			Resources: &cgroups.Resources{
				Memory:     s.memoryBytes,
				MemorySwap: swap,
				CpuShares:  s.cpuShares,
				CpuQuota:   s.cpuQuota,
				CpusetCpus: s.cpuset,
				CpuPeriod:  period,
				PidsLimit:  &pids,
				Devices:    devices,
			},
		},
		MaskPaths:     maskedPaths,
		ReadonlyPaths: readonlyPaths,
		Devices:       append(slices.Clip(specconv.AllowedDevices), s.devices...),
		Networks:      []*configs.Network{{Type: "loopback", Address: "127.0.0.1/0", Gateway: "localhost"}},
		Rlimits:       s.rlimits,
		Mounts: []*configs.Mount{
			{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV},
			{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755,size=65536k"},
			{Source: "devpts", Destination: "/dev/pts", Device: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: "newinstance,ptmxmode=0666,mode=0620"},
			{Source: "shm", Destination: "/dev/shm", Device: "tmpfs", Flags: unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=1777,size=65536k"},
			{Source: "mqueue", Destination: "/dev/mqueue", Device: "mqueue", Flags: unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV},
			{Source: "sysfs", Destination: "/sys", Device: "sysfs", Flags: unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_RDONLY},
		},
	}
	// tmpfs pages count against the job's memory limit.
	cfg.Mounts = append(cfg.Mounts, &configs.Mount{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs",
		Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=1777"})
	for _, m := range s.hostDirs {
		if m == s.dirTop {
			continue
		}
		// Not recursive: mounts below the host's top-level directories
		// (network namespaces under /run, other file systems) stay out of
		// the job's view, and out of the way of CRIU, which cannot
		// checkpoint a mount tree whose sharing it cannot reach.
		cfg.Mounts = append(cfg.Mounts, &configs.Mount{
			Source: m, Destination: m, Device: "bind",
			Flags: unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV,
		})
	}
	// The job's own directories, the only ones it can write, at places
	// that do not depend on the machine (see JobScratchDir).
	if s.scratch != "" {
		cfg.Mounts = append(cfg.Mounts, bindMount(s.scratch, JobScratchDir))
	}
	if s.dirTop != "" {
		// Root's, 0755: the job can reach its directory, and write nothing
		// else there.
		cfg.Mounts = append(cfg.Mounts, &configs.Mount{Source: "tmpfs", Destination: s.dirTop, Device: "tmpfs",
			Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, Data: "mode=755,size=64k,nr_inodes=256"})
	}
	if s.dirSource != "" {
		cfg.Mounts = append(cfg.Mounts, bindMount(s.dirSource, s.dir))
	}
	return cfg
}

// bindMount binds the host directory src read-write at dst.
func bindMount(src, dst string) *configs.Mount {
	return &configs.Mount{Source: src, Destination: dst, Device: "bind",
		Flags: unix.MS_BIND | unix.MS_REC | unix.MS_NOSUID | unix.MS_NODEV}
}

// prepareRootfs makes dir the skeleton of the containers' root file
// system where there is no host root (see hostRoot): an empty directory for every top-level directory of the host
// (bar those the container makes for itself) and the host's top-level
// symbolic links (merged /usr: /bin -> usr/bin). It returns the
// directories, to be bound read-only. It is cheap when dir is ready.
func prepareRootfs(dir string) ([]string, error) {
	entries, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		host, in := "/"+e.Name(), filepath.Join(dir, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(host)
			if err != nil {
				return nil, err
			}
			if err := os.Symlink(target, in); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, err
			}
		case e.IsDir():
			if err := os.Mkdir(in, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, err
			}
			if !under(host, ownMounts) {
				dirs = append(dirs, host)
			}
		}
	}
	for _, m := range ownMounts {
		if err := os.MkdirAll(filepath.Join(dir, m), 0o755); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// under reports whether path is one of dirs or below one of them.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

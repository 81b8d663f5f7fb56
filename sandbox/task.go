package sandbox

import (
	"os"
	"runtime"

	"github.com/moby/sys/capability"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Task is one job to run: what, where, and under which limits.
type Task struct {
	// ID names the job ("12.3"); it is part of the container's name.
	ID   string
	Path string   // the program, absolute
	Args []string // without argv[0]
	Env  []string
	// Dir is the job's working directory; it and ScratchDir are the only
	// host directories the job can write.
	Dir        string
	ScratchDir string
	// DirSource, when set, is the host directory bound at Dir inside the
	// container (the job's submit-side directory served by iofs, which
	// lives elsewhere on this machine); otherwise Dir is bound from the
	// same host path.
	DirSource string
	// InScratch, with DirSource, has the job work in its scratch
	// directory all the same, Dir only a view in which it may open files:
	// a job whose files are transferred that sees its submit-side
	// directory too.
	InScratch bool
	// Stdin (nil: /dev/null), Stdout and Stderr are handed to the job.
	Stdin          *os.File
	Stdout, Stderr *os.File
	// Cpus, MemoryMB and DiskKB are the job's requests; zero means no
	// limit (Cpus: one CPU's share). DiskKB limits the scratch directory
	// (see Policy.DiskFactor).
	Cpus     int64
	MemoryMB int64
	DiskKB   int64
	// Cpuset, when set, pins the job to these cores, in the kernel's list
	// format ("0-1,4"): its slot's own (ASSIGN_CPU_AFFINITY).
	Cpuset string
	// MachineCpus is how many CPUs the machine offers jobs, which the
	// administrator may set above the hardware's (0: the hardware's); a
	// job requesting more cannot start.
	MachineCpus int64
	// ScratchLimitKB caps the scratch directory whatever DiskKB says:
	// the slot's share of the machine's disk (0: no cap).
	ScratchLimitKB int64
	// ImageLayers, when set, are the unpacked layers of the job's own
	// container image, bottom first (see the imagecache package): the
	// job's root is an overlay of them, read-only, and a writable upper
	// directory in ScratchDir, instead of the machine's root.
	ImageLayers []string
	// Devices are host device nodes the job is given (its GPUs): made at
	// the same paths in its container and allowed by its device cgroup.
	// A job holding any is not checkpointed (ErrGPUCheckpoint).
	Devices []string
	// Rlimits are resource limits the job's processes start under, soft
	// and hard alike (its coresize and stack_size); the machine's own for
	// the others.
	Rlimits []Rlimit
}

// Rlimit is one resource limit: unix.RLIMIT_CORE, say, and its value
// (unix.RLIM_INFINITY: none).
type Rlimit struct {
	Resource int
	Limit    uint64
}

// machineCpus is MachineCpus or, unset, the hardware's CPUs.
func (t *Task) machineCpus() int64 {
	if t.MachineCpus > 0 {
		return t.MachineCpus
	}
	return int64(runtime.NumCPU())
}

// scratchLimit returns the size in bytes beyond which the job's scratch
// directory puts it on hold, and the figure in KiB its hold reason
// names; 0 when nothing limits it.
func (t *Task) scratchLimit(factor float64) (bytes, kb int64) {
	if factor > 0 && t.DiskKB > 0 {
		bytes, kb = int64(float64(t.DiskKB)*1024*factor), t.DiskKB
	}
	if t.ScratchLimitKB > 0 && (bytes == 0 || t.ScratchLimitKB*1024 < bytes) {
		bytes, kb = t.ScratchLimitKB*1024, t.ScratchLimitKB
	}
	return bytes, kb
}

// Exit says how a job ended.
type Exit struct {
	// Code is the exit status, when Signal is 0.
	Code   int
	Signal int
	Usage  Usage
	// HoldReason and HoldCode are set when the job broke a limit and must
	// go on hold rather than be reported as finished.
	HoldReason string
	HoldCode   int
}

// Usage is a job's resource use.
type Usage struct {
	UserCPU, SysCPU float64 // seconds
	MaxRSSBytes     int64   // peak memory of the job's cgroup
	MemoryBytes     int64   // memory now
	DiskBytes       int64   // size of the scratch directory
}

// HoldCodeOutOfResources is HTCondor's HoldReasonCode for a job that went
// over a resource limit (JobOutOfResources).
const HoldCodeOutOfResources = 34

// containerRlimits are limits as a container's init sets them, soft and
// hard alike. One above the starter's own hard limit needs the privilege
// to raise it, which a root starter may lack (virtual machines drop
// CAP_SYS_RESOURCE): it is held to that limit then, as HTCondor's
// starter does when it is not root, rather than keep the job from
// starting.
func containerRlimits(ls []Rlimit) []configs.Rlimit {
	var out []configs.Rlimit
	for _, l := range ls {
		limit := l.Limit
		var own unix.Rlimit
		if unix.Getrlimit(l.Resource, &own) == nil && limit > own.Max && !mayRaiseLimits() {
			limit = own.Max
		}
		out = append(out, configs.Rlimit{Type: l.Resource, Hard: limit, Soft: limit})
	}
	return out
}

// mayRaiseLimits reports whether this process may raise hard resource
// limits: whether it holds CAP_SYS_RESOURCE.
func mayRaiseLimits() bool {
	caps, err := capability.NewPid2(0)
	if err != nil || caps.Load() != nil {
		return false
	}
	return caps.Get(capability.EFFECTIVE, capability.CAP_SYS_RESOURCE)
}

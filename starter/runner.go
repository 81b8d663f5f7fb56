package starter

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/iofs"
)

// Runner starts jobs. The plain-process runner (ProcessRunner) works
// anywhere; the sandbox package provides one that runs each job in a
// container with limits. The startd chooses, and says so in its ad.
type Runner interface {
	// Start starts the task. An error means the job could not start at
	// all (missing or non-executable program, bad directory, unmeetable
	// limits) and is reported to the user as the hold reason.
	Start(ctx context.Context, t *Task) (Job, error)
}

// Task is what to run and under which limits.
type Task struct {
	// ID names the job ("12.3"), for container and cgroup names.
	ID   string
	Path string
	Args []string // without argv[0]
	Env  []string
	// Dir is the job's working directory. When DirSource is set, Dir is a
	// path inside the job's container, bound from DirSource on the execute
	// machine (the job's submit-side directory, served by iofs); runners
	// without containers ignore DirSource and need Dir to exist here.
	Dir       string
	DirSource string
	// InScratch, with DirSource, has the job work in its scratch
	// directory all the same, Dir only a view of its submit-side
	// directory (should_transfer_files = YES with want_submit_dir).
	InScratch bool
	// ScratchDir is the job's private directory on the execute machine.
	ScratchDir string
	// Stdin is the job's standard input (nil: /dev/null). Stdout and
	// Stderr are the write ends of pipes the starter reads; the runner
	// hands them to the job and the starter closes its copies after Start.
	Stdin          *os.File
	Stdout, Stderr *os.File
	// Limits from the job's requests.
	Cpus     int64
	MemoryMB int64
	DiskKB   int64
	// ScratchLimitKB caps the scratch directory whatever DiskKB says (0:
	// no cap).
	ScratchLimitKB int64
	// Cpuset, when set, pins the job to its slot's cores ("0-1,4").
	Cpuset string
	// MachineCpus is how many CPUs the execute machine advertises (0:
	// the hardware's), what a request for CPUs is held to.
	MachineCpus int64
	// ImageLayers are the layers of the job's own container image, bottom
	// first (see ImageRunner); none: the machine's own system.
	ImageLayers []string
	// Devices are the device nodes the job is given (its GPUs); runners
	// without containers cannot keep it from others.
	Devices []string
	// RestoreFailure is set by a start that was to restore the job from
	// its checkpoint and started it from the beginning instead: why.
	RestoreFailure string
	// Rlimits are resource limits the job starts under, soft and hard
	// alike: its coresize and stack_size (see jobRlimits).
	Rlimits []Rlimit
}

// Rlimit is one resource limit: unix.RLIMIT_CORE, say, and its value
// (unix.RLIM_INFINITY: none).
type Rlimit struct {
	Resource int
	Limit    uint64
}

// ScratchRelocator is a Runner whose jobs see their scratch directory
// at a place of the runner's own (in a container, the same on every
// machine) rather than at Task.ScratchDir: the starter tells the job
// that place (HOME, TMPDIR, _CONDOR_SCRATCH_DIR).
type ScratchRelocator interface {
	JobScratchDir() string
}

// ScratchKeeper is a Runner that keeps directories of its own in a
// job's scratch directory (a container's image root): a checkpoint that
// carries the scratch directory leaves them out, as the runner's own
// checkpoint and restore take care of them.
type ScratchKeeper interface {
	KeptInScratch() []string
}

// JobUserRunner is a Runner whose jobs run as a user of its own (the
// slot user): transfer plugins and output written on the execute
// machine run as that user too. For other runners they run as nobody.
type JobUserRunner interface {
	JobUser() (uid, gid int)
}

// jobIDs are the user and group the job's own processes run as: the
// runner's, or the starter's.
func (s *Starter) jobIDs() iofs.IDs {
	if r, ok := s.runner.(JobUserRunner); ok {
		uid, gid := r.JobUser()
		return iofs.IDs{UID: uint32(uid), GID: uint32(gid)}
	}
	return iofs.IDs{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
}

// Job is a started job.
type Job interface {
	// Pid is the job's first process, as the execute machine sees it.
	Pid() int
	// Signal sends sig to every process of the job.
	Signal(sig unix.Signal) error
	// Suspend stops every process of the job; Continue resumes them.
	Suspend() error
	Continue() error
	// Wait blocks until the job's first process has exited, then makes
	// sure no process of the job is left, and releases what the runner
	// holds for it. It reports how the job ended.
	Wait() (Exit, error)
	// Usage reports the job's resource use so far.
	Usage() (Usage, error)
}

// Exit says how a job ended.
type Exit struct {
	// Signal is the signal that killed the job, or 0 if it exited with
	// Code.
	Code   int
	Signal int
	Usage  Usage
	// HoldReason and HoldCode are set when the job ended because it broke
	// a limit (it went over its memory request, say): the job is put on
	// hold with this reason rather than reported as finished.
	HoldReason string
	HoldCode   int
}

// Usage is a job's resource use.
type Usage struct {
	UserCPU, SysCPU float64 // seconds
	MaxRSSBytes     int64
	MemoryBytes     int64 // now
}

// Checkpointer is a Job that can be checkpointed (with CRIU, in a
// container).
type Checkpointer interface {
	// Checkpoint dumps the job into imageDir, which must not exist.
	// Unless leaveRunning, the job ends with the dump and Wait returns.
	Checkpoint(ctx context.Context, imageDir string, leaveRunning bool) (CheckpointStats, error)
}

// CheckpointStats are a dump's figures.
type CheckpointStats struct {
	Frozen, Dump time.Duration
	ImageBytes   int64
	// PreDumps is the number of pre-dumps made while the job ran (pre-copy,
	// where the machine supports it), PreDump their time together.
	PreDumps int
	PreDump  time.Duration
}

// Restorer is a Runner that can bring back a checkpointed job from an
// image instead of starting it afresh. The image in imageDir has had its
// seal checked; the runner still trusts nothing of it but the job's
// processes.
type Restorer interface {
	Restore(ctx context.Context, t *Task, imageDir string) (Job, error)
}

// ImageRunner is a Runner that runs jobs in their own container images
// (universe = container or docker). Image makes the image named by ref
// ready on this machine (a path to an OCI image layout or a docker-save
// tarball, or a registry reference, pulled with creds when not nil) and
// holds it for the job until Image.Release.
type ImageRunner interface {
	Image(ctx context.Context, ref string, creds *RegistryCredentials) (*Image, error)
}

// RegistryCredentials are what the job's submitter gave for the
// registry of its image, as docker's config.json holds them. The
// starter keeps them in memory only.
type RegistryCredentials struct {
	Username, Password string
	Auth               string // base64 of "username:password"
	IdentityToken      string
	RegistryToken      string
}

// Image is a container image held for a job.
type Image struct {
	ID       string   // the digest of its configuration
	Digest   string   // the digest of its manifest, by which a registry serves it
	Layers   []string // for Task.ImageLayers
	Env      []string // what the image sets, under the job's own environment
	Unpacked int      // layers fetched and unpacked for this job; the rest were cached
	Release  func() error
}

// Restored is a Job a Restorer brought back; RestoreTime is how long
// CRIU took to restore it (CRIU's own statistics).
type Restored interface {
	RestoreTime() time.Duration
}

// Execer is a Job that can start another process inside itself, for the
// job's owner (harrier ssh-to-job): as the job's user, in its working
// directory, with its environment, its use counted as the job's.
type Execer interface {
	Exec(ctx context.Context, e *ExecTask) (Process, error)
}

// ExecTask is a process to start in a running job.
type ExecTask struct {
	Args []string
	// Env is added to the job's environment.
	Env []string
	// With TTY the process gets a terminal of Rows x Cols as its standard
	// input, output and error (Process.Console); without, Stdin, Stdout
	// and Stderr, which the starter closes after Exec.
	TTY                   bool
	Rows, Cols            uint16
	Stdin, Stdout, Stderr *os.File
}

// Process is a process started in a job by Execer.
type Process interface {
	// Console is the master of the process's terminal (nil without
	// one), for the starter to read, write and close.
	Console() *os.File
	Resize(rows, cols uint16) error
	// Kill kills the process (not what it started).
	Kill() error
	// Wait blocks until the process has ended.
	Wait() (ProcessExit, error)
}

// ProcessExit says how a process in a job ended.
type ProcessExit struct {
	Code, Signal int
	// JobEnding is set when the process was killed because the job was
	// ending: the job's end took it along.
	JobEnding bool
}

// jobRlimits are the resource limits the job's submit file asked for:
// coresize (CoreSize) and stack_size (StackSize), in bytes, -1 for none,
// as HTCondor's. A job that sets neither runs under the machine's.
func jobRlimits(job *classad.ClassAd) []Rlimit {
	var out []Rlimit
	for _, l := range []struct {
		attr     string
		resource int
	}{{"CoreSize", unix.RLIMIT_CORE}, {"StackSize", unix.RLIMIT_STACK}} {
		n, ok := job.EvalInt(l.attr)
		if !ok || n < -1 {
			continue
		}
		limit := uint64(n)
		if n == -1 {
			limit = unix.RLIM_INFINITY
		}
		out = append(out, Rlimit{Resource: l.resource, Limit: limit})
	}
	return out
}

package startd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/gpu"
)

// Config is everything a startd is told at start-up. The zero values of the
// optional fields select the documented defaults.
type Config struct {
	// Name is the machine's name in the pool (Machine, and the "@name"
	// part of each slot's Name). Default: the host name.
	Name   string
	Logger *slog.Logger // default slog.Default()
	// TLS serves the Startd service; ClientTLS is used to reach the
	// matchmaker. Both are required.
	TLS, ClientTLS *tls.Config
	// MatchmakerAddr is the collector's address (required).
	MatchmakerAddr string
	// AdvertiseAddr is the ip:port advertised as StartdAddr; it must be the
	// listener's address as the matchmaker and agents reach it. Default:
	// the listener's own address.
	AdvertiseAddr string
	// Start and Rank are the owner's START and RANK ClassAd expressions.
	// Defaults: "true" and "0".
	Start, Rank string
	// The rest of the owner's policy, ClassAd expressions evaluated every
	// PollingInterval with MY = the slot's machine ad and TARGET = the
	// job's ad: SUSPEND, CONTINUE, PREEMPT, KILL, WANT_SUSPEND,
	// WANT_VACATE, IS_OWNER, MACHINE_MAX_VACATE_TIME (seconds) and
	// MAXJOBRETIREMENTTIME (seconds). Empty selects HTCondor's defaults:
	// false, true, false, false, false, true, "(START =?= false)", 600
	// and 0. See decide for what each one does, Drain for the retirement
	// time, and policy.go for how undefined values are treated.
	Suspend, Continue, Preempt, Kill string
	WantSuspend, WantVacate, IsOwner string
	MaxVacateTime                    string
	MaxJobRetirementTime             string
	// PollingInterval is how often the policy is evaluated. Default 1 s.
	PollingInterval time.Duration
	// ClaimLease is how long a claim lives without a KeepAlive from its
	// agent before the startd releases it. Default 60 s.
	ClaimLease time.Duration
	// Terminals are glob patterns of the terminal devices whose access
	// times show someone typing (KeyboardIdle). Nil selects /dev/tty* and
	// /dev/pts/*; an empty slice watches none.
	Terminals []string
	// ConsoleDevices are glob patterns of the devices of the machine's
	// own console (ConsoleIdle, which also counts for KeyboardIdle), in
	// addition to keyboard and mouse interrupts. Nil selects /dev/console
	// and /dev/input/*; an empty slice watches none.
	ConsoleDevices []string
	// NumSlots is the number of slots; each gets an even share of the
	// machine's CPUs, memory and disk. Default 1. It is ignored when
	// SlotTypes are given.
	NumSlots int
	// SlotTypes lay the machine out in slots by type, as HTCondor's
	// NUM_SLOTS_TYPE_<n>, SLOT_TYPE_<n> and SLOT_TYPE_<n>_PARTITIONABLE
	// do: static slots of a given share, or partitionable slots from
	// which each match carves a dynamic slot of the job's size.
	SlotTypes []SlotType
	// NumCPUs and MemoryMiB, when positive, replace the machine's
	// measured CPUs and memory (HTCondor's NUM_CPUS and MEMORY): an
	// administrator may advertise more or less than the hardware has.
	NumCPUs   int
	MemoryMiB int64
	// AssignCPUAffinity pins each job in a container to cores of its
	// own, as many as its slot has CPUs (HTCondor's ASSIGN_CPU_AFFINITY):
	// the lowest cores no other claimed slot holds. A slot claimed when
	// no such cores are left (NUM_CPUS above the hardware's) runs its
	// jobs unpinned.
	AssignCPUAffinity bool
	// ScratchLimitKB caps every job's scratch directory (KiB); a job
	// that outgrows it is held. Zero gives each job its slot's share of
	// the execute directory's free space when it starts (the slot's
	// Disk); negative sets no cap. A request_disk of the job's own is
	// held to the sandbox's disk factor as well.
	ScratchLimitKB int64
	// ExecuteDir holds the jobs' scratch directories and the starter logs
	// (required; created if missing).
	ExecuteDir string
	// AdvertiseInterval is how often ads are refreshed; each ad's lease is
	// three intervals. Default 10 s.
	AdvertiseInterval time.Duration
	// StarterCommand is the argv that runs a starter (required).
	StarterCommand []string
	// ThreadEnvVars are the environment variables set, in every job's
	// environment, to the processors its slot has
	// (STARTER_NUM_THREADS_ENV_VARS; see DefaultThreadEnvVars).
	ThreadEnvVars []string
	// Metrics is where the startd registers its metrics (its slots, the
	// jobs it starts and the calls it serves); nil keeps them
	// unregistered.
	Metrics prometheus.Registerer
	// CertFile, KeyFile and CAFile are handed to each starter so that it
	// can reach its shadow over mutual TLS.
	CertFile, KeyFile, CAFile string
	// CheckpointKeyFile is the pool's checkpoint key, handed to each
	// starter to seal and check the job's checkpoint images (see
	// starter.Spec). Empty: jobs are not checkpointed here.
	CheckpointKeyFile string
	// CheckpointPlatform is what the machine advertises as its
	// CheckpointPlatform where it can restore checkpoints: a job
	// checkpointed elsewhere runs here only if this is the platform it
	// was checkpointed on. Empty: what checkpoint.Platform measures; an
	// administrator sets it (CHECKPOINT_PLATFORM) to tell the pool that
	// machines differing only in ways checkpoints do not mind are alike.
	CheckpointPlatform string
	// Sandbox is how jobs run: "container", "process", or "" to use
	// containers where they work (see sandbox.go). Advertised as
	// HarrierSandbox.
	Sandbox string
	// Attrs are attributes the administrator adds to every slot's ad
	// (HTCondor's STARTD_ATTRS), by name, as ClassAd expressions: what
	// jobs and gangs may ask for (Subnet = "10.1"). They do not replace
	// the attributes the startd measures or sets.
	Attrs map[string]string
	// GPUs are the machine's GPUs (see the gpu package), shared among the
	// slots as gpu.Share says; a job that requests GPUs is given its
	// slot's alone.
	GPUs gpu.Inventory
	// Cron are the administrator's STARTD_CRON jobs (see cron.go).
	Cron []CronJob
	// CronUser is the account a startd running as root runs its cron
	// jobs as. Default "nobody", or root on a machine without that
	// account; a startd that is not root runs them as itself.
	CronUser string
	// TransferPlugins are the administrator's file transfer plugins
	// (FILETRANSFER_PLUGINS), programs asked their capabilities when the
	// startd starts: each scheme they support joins
	// HasFileTransferPluginMethods, and the starter runs them, as the
	// job's user, for its URLs of the scheme.
	TransferPlugins []string
}

// DefaultThreadEnvVars are HTCondor's STARTER_NUM_THREADS_ENV_VARS: the
// variables that OpenMP, MKL, OpenBLAS, NumExpr, Julia, Go, Python, ROOT,
// TensorFlow and Cuba read for how many threads to run.
var DefaultThreadEnvVars = []string{"CUBACORES", "GOMAXPROCS", "JULIA_NUM_THREADS", "MKL_NUM_THREADS",
	"NUMEXPR_NUM_THREADS", "OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OPENBLAS_NUM_THREADS", "PYTHON_CPU_COUNT",
	"ROOT_MAX_THREADS", "TF_LOOP_PARALLEL_ITERATIONS", "TF_NUM_THREADS"}

// A SlotType is one kind of slot of the machine.
type SlotType struct {
	// Count is how many slots of the type there are (NUM_SLOTS_TYPE_<n>).
	Count int
	// Share is each slot's part of the machine (SLOT_TYPE_<n>), in
	// HTCondor's syntax: "cpus=4, memory=8G, disk=25%", or "50%" for
	// every resource; a resource not named gets an even share among all
	// the machine's slots. See parseShare.
	Share string
	// Partitionable makes each slot of the type partitionable
	// (SLOT_TYPE_<n>_PARTITIONABLE).
	Partitionable bool
}

const (
	defaultAdvertiseInterval = 10 * time.Second
	defaultPollingInterval   = time.Second
	defaultClaimLease        = 60 * time.Second
	// matchTimeout is how long a Matched slot waits for its claim.
	matchTimeout = 60 * time.Second
	// claimIdleTimeout is how long a claim may sit idle, with no job
	// started under it, before the startd releases it.
	claimIdleTimeout = 20 * time.Second
	// killGrace is how long a starter has between SIGTERM and SIGKILL.
	killGrace = 5 * time.Second
	// defaultCronUser runs the cron jobs of a startd that runs as root.
	defaultCronUser = "nobody"
)

// defaultTerminals and defaultConsoleDevices are the device patterns idle
// detection watches unless told otherwise.
func defaultTerminals() []string      { return []string{"/dev/tty*", "/dev/pts/*"} }
func defaultConsoleDevices() []string { return []string{"/dev/console", "/dev/input/*"} }

// withDefaults checks cfg, fills in its defaults and parses the policy
// expressions; a parse error names the configuration key and the position.
func (cfg Config) withDefaults() (Config, policy, error) {
	var errs []error
	if cfg.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			errs = append(errs, fmt.Errorf("no name configured and no host name: %w", err))
		}
		cfg.Name = h
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TLS == nil || cfg.ClientTLS == nil {
		errs = append(errs, errors.New("TLS and client TLS configurations are required"))
	}
	if cfg.MatchmakerAddr == "" {
		errs = append(errs, errors.New("no matchmaker address"))
	}
	if cfg.Start == "" {
		cfg.Start = defaultStart
	}
	if cfg.Rank == "" {
		cfg.Rank = defaultRank
	}
	pol, err := parsePolicy(cfg)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.PollingInterval == 0 {
		cfg.PollingInterval = defaultPollingInterval
	}
	if cfg.PollingInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("polling interval %v is too short", cfg.PollingInterval))
	}
	if cfg.ClaimLease == 0 {
		cfg.ClaimLease = defaultClaimLease
	}
	if cfg.ClaimLease < time.Second {
		errs = append(errs, fmt.Errorf("claim lease %v is shorter than a second", cfg.ClaimLease))
	}
	if cfg.Terminals == nil {
		cfg.Terminals = defaultTerminals()
	}
	if cfg.ConsoleDevices == nil {
		cfg.ConsoleDevices = defaultConsoleDevices()
	}
	if cfg.NumSlots == 0 {
		cfg.NumSlots = 1
	}
	if cfg.NumSlots < 0 {
		errs = append(errs, fmt.Errorf("number of slots %d is negative", cfg.NumSlots))
	}
	total := 0
	for i, st := range cfg.SlotTypes {
		total += st.Count
		if st.Count < 0 {
			errs = append(errs, fmt.Errorf("slot type %d: number of slots %d is negative", i+1, st.Count))
		}
		if _, err := parseShare(st.Share); err != nil {
			errs = append(errs, err)
		}
	}
	if len(cfg.SlotTypes) > 0 && total == 0 {
		errs = append(errs, errors.New("the slot types make no slot: set NUM_SLOTS_TYPE_<n>"))
	}
	if cfg.NumCPUs < 0 || cfg.MemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("NUM_CPUS %d or MEMORY %d is negative", cfg.NumCPUs, cfg.MemoryMiB))
	}
	if cfg.ExecuteDir == "" {
		errs = append(errs, errors.New("no execute directory"))
	}
	if cfg.AdvertiseInterval == 0 {
		cfg.AdvertiseInterval = defaultAdvertiseInterval
	}
	if cfg.AdvertiseInterval < time.Second {
		errs = append(errs, fmt.Errorf("advertise interval %v is shorter than a second", cfg.AdvertiseInterval))
	}
	if err := checkSandbox(cfg.Sandbox); err != nil {
		errs = append(errs, err)
	}
	names := map[string]bool{}
	for _, j := range cfg.Cron {
		if err := j.check(); err != nil {
			errs = append(errs, err)
		}
		if names[j.Name] {
			errs = append(errs, fmt.Errorf("cron job %s listed twice", j.Name))
		}
		names[j.Name] = true
	}
	if len(cfg.StarterCommand) == 0 {
		errs = append(errs, errors.New("no starter command"))
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, pol, fmt.Errorf("startd configuration: %w", err)
	}
	return cfg, pol, nil
}

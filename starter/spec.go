package starter

import "fmt"

// Spec is what a startd tells a starter about a job: which job, where its
// shadow is, and where the starter may work. It travels in a Command.
type Spec struct {
	// Slot is the slot name ("slot1@host") the job runs in.
	Slot string `json:"slot"`
	// Host is the execute machine's name, reported to the shadow.
	Host string `json:"host"`
	// ClaimID identifies the claim the job runs under.
	ClaimID string `json:"claim_id"`
	// JobAd is the job's ad in new ClassAd syntax, as the agent sent it.
	JobAd string `json:"job_ad"`
	// MachineAd is the slot's ad as the job starts, in new ClassAd
	// syntax: the job finds it in its scratch directory (MachineAdFile).
	MachineAd string `json:"machine_ad,omitempty"`
	// ShadowAddr and Secret are how the starter finds and proves itself to
	// the job's shadow; ShadowFingerprint is the SHA-256 of the shadow's
	// session certificate, the only one the starter accepts (a shadow has
	// no pool certificate: see pki.Session).
	ShadowAddr        string `json:"shadow_addr"`
	ShadowFingerprint string `json:"shadow_fingerprint"`
	Secret            string `json:"secret"`
	// ScratchDir is an empty directory owned by this job; the startd
	// removes it after the starter exits.
	ScratchDir string `json:"scratch_dir"`
	// Sandbox says how the job runs: "container" (the sandbox package)
	// or "process" (a plain child process, where containers are not
	// available). The startd chooses and advertises its choice.
	Sandbox string `json:"sandbox,omitempty"`
	// ScratchLimitKB caps the job's scratch directory whatever its
	// request (KiB; 0: no cap): the slot's share of the machine's disk or
	// the administrator's limit.
	ScratchLimitKB int64 `json:"scratch_limit_kb,omitempty"`
	// Cpuset, when set, is the cores the job is pinned to, its slot's
	// own (ASSIGN_CPU_AFFINITY), in the kernel's list format ("0-1,4").
	Cpuset string `json:"cpuset,omitempty"`
	// Cpus is the slot's CPUs. The startd sizes the starter's Go runtime
	// to them (childproc.Env): the starter works for the slot's jobs
	// alone. The job's ThreadEnvVars say them to it.
	Cpus int64 `json:"cpus,omitempty"`
	// ThreadEnvVars are the environment variables that tell a job's
	// libraries (OpenMP, MKL, Go, ...) how many processors it has
	// (STARTER_NUM_THREADS_ENV_VARS).
	ThreadEnvVars []string `json:"thread_env_vars,omitempty"`
	// MachineCpus is the number of CPUs the execute machine advertises
	// (NUM_CPUS may set more than the hardware has); 0: the hardware's.
	MachineCpus int64 `json:"machine_cpus,omitempty"`
	// Reusable says that the startd may give the starter the claim's next
	// job: once a job has ended, the starter reports EventEnded and waits
	// for the next Command with a Job, until its input ends.
	Reusable bool `json:"reusable,omitempty"`
	// TLS material of the execute host, signed by the pool CA.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	CAFile   string `json:"ca_file"`
	// CheckpointKeyFile is the pool's checkpoint key (see
	// checkpoint.LoadKey), which every execute machine of the pool
	// shares and no user holds: the starter seals the job's checkpoint
	// images with it and restores only images sealed with it for the
	// same job. Empty: this machine takes and restores no checkpoints.
	CheckpointKeyFile string `json:"checkpoint_key_file,omitempty"`
	// GPUs are the slot's GPUs, given to a job that requests GPUs
	// (RequestGPUs > 0), its alone while it runs, and GPUDevices the
	// device nodes every GPU job needs besides its own.
	GPUs       []GPU    `json:"gpus,omitempty"`
	GPUDevices []string `json:"gpu_devices,omitempty"`
	// TransferPlugins maps a URL scheme to the administrator's transfer
	// plugin for it (see the transferplugin package).
	TransferPlugins map[string]string `json:"transfer_plugins,omitempty"`
}

// Command is sent by the startd to a starter on its standard input (see
// childproc). A starter serves the jobs of one claim in turn: Job starts the
// next one, once the previous one's end has been reported (EventEnded), and
// the other fields concern the job being run. The end of the stream tells a
// starter that no job will follow.
type Command struct {
	Job *Spec `json:"job,omitempty"`
	// Suspend and Continue stop and resume the job's processes for the
	// machine's owner.
	Suspend  bool `json:"suspend,omitempty"`
	Continue bool `json:"continue,omitempty"`
	// Vacate stops the job so that it runs again elsewhere, from a
	// checkpoint where it can have one; Kill stops it at once. After
	// either, the starter takes no further job.
	Vacate bool `json:"vacate,omitempty"`
	Kill   bool `json:"kill,omitempty"`
}

// Event is what a starter reports to its startd on its standard output.
type Event struct {
	Type EventType `json:"type"`
}

// EventType names what happened.
type EventType string

// EventEnded: the job has ended and the starter has cleaned up after it;
// it waits for the claim's next job (a Command with Job) or the end of its
// input.
const EventEnded EventType = "ended"

// Check reports a spec that lacks what a starter cannot work without.
func (s *Spec) Check() error {
	switch {
	case s.JobAd == "":
		return fmt.Errorf("starter spec: no job ad")
	case s.ShadowAddr == "" || s.ShadowFingerprint == "":
		return fmt.Errorf("starter spec: no shadow address or fingerprint")
	case s.ScratchDir == "":
		return fmt.Errorf("starter spec: no scratch directory")
	}
	return nil
}

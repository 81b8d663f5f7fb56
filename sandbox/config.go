package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Policy is what the machine's administrator decides for every slot. The
// startd saves it in the state root (WritePolicy) and each starter reads it
// (ReadPolicy), so that both see the pool configuration the startd was
// started with.
type Policy struct {
	// User is the slot user jobs run as. Default "nobody".
	User string `json:"user,omitempty"`
	// SlotUsers are users of the slots' own for jobs that run as plain
	// processes, by short slot name ("slot2"), in place of User
	// (HTCondor's SLOT<N>_USER): the jobs of different slots then run
	// as different users, who cannot reach one another's processes and
	// files, as nothing else keeps such jobs apart. A dynamic slot
	// ("slot1_3") has its own entry if it has one, else its
	// partitionable slot's. Jobs in containers run as User on every
	// slot: their namespaces keep them apart, and a checkpointed job is
	// restored as the user it was dumped as, on whichever slot.
	SlotUsers map[string]string `json:"slot_users,omitempty"`
	// AllowRoot lets User be root; without it a root slot user is an error.
	AllowRoot bool `json:"allow_root,omitempty"`
	// PidsLimit caps the number of processes and threads of a job.
	// Default 1024.
	PidsLimit int64 `json:"pids_limit,omitempty"`
	// CPUQuota adds a hard CPU quota of request_cpus CPUs to the CPU
	// shares every job gets in proportion to request_cpus.
	CPUQuota bool `json:"cpu_quota,omitempty"`
	// DiskFactor puts a job on hold once its scratch directory holds more
	// than DiskFactor times its disk request (Task.DiskKB); a task
	// without one is not checked. Default 2; negative turns the check
	// off.
	DiskFactor float64 `json:"disk_factor,omitempty"`
	// DiskInterval is how often a job's scratch directory is measured
	// (the job's DiskUsage, and the check above). Default 30 s.
	DiskInterval time.Duration `json:"disk_interval,omitempty"`
	// ImageCacheMB caps the machine's cache of container images (see
	// the imagecache package) that no running job uses. Default 10240;
	// negative: no cap. It is here so that every starter reads it.
	ImageCacheMB int64 `json:"image_cache_mb,omitempty"`
	// ImageRegistryCA names a PEM file of certificate authorities
	// trusted for image registries besides the system's.
	ImageRegistryCA string `json:"image_registry_ca,omitempty"`
}

// Config is how a slot runs its jobs. The zero values of the optional
// fields select the documented defaults.
type Config struct {
	// StateRoot is a directory the sandbox owns (required): container state
	// lives under it, and it names the slot cgroups, so it must be the same
	// for the starters of a slot and for the startd that cleans up after
	// them.
	StateRoot string
	// Slot is the slot's short name ("slot1"), required.
	Slot string
	Policy
	Logger *slog.Logger // default slog.Default()
}

const (
	defaultUser         = "nobody"
	defaultPidsLimit    = 1024
	defaultDiskFactor   = 2
	defaultDiskInterval = 30 * time.Second
	// minMemoryMB is the smallest memory limit a job can start under: the
	// container's init needs a few MiB before the job's first instruction.
	minMemoryMB = 8
)

// identity is a resolved slot user.
type identity struct {
	name     string
	uid, gid int
}

// withDefaults checks cfg, fills in its defaults and resolves the slot
// user.
func (cfg Config) withDefaults() (Config, identity, error) {
	var errs []error
	if cfg.StateRoot == "" {
		errs = append(errs, errors.New("no state root"))
	} else if !filepath.IsAbs(cfg.StateRoot) {
		errs = append(errs, fmt.Errorf("state root %q is not absolute", cfg.StateRoot))
	}
	if err := checkSlot(cfg.Slot); err != nil {
		errs = append(errs, err)
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = defaultPidsLimit
	}
	if cfg.PidsLimit < 0 {
		errs = append(errs, fmt.Errorf("pids limit %d is negative", cfg.PidsLimit))
	}
	if cfg.DiskFactor == 0 {
		cfg.DiskFactor = defaultDiskFactor
	}
	if cfg.DiskInterval <= 0 {
		cfg.DiskInterval = defaultDiskInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	id, err := slotIdentity(cfg.Policy, "")
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, identity{}, fmt.Errorf("sandbox configuration: %w", err)
	}
	return cfg, id, nil
}

// SlotUser resolves the user the plain-process jobs of slot (its short
// name, "slot1") run as under p (default nobody), refusing root unless
// p allows it.
func SlotUser(p Policy, slot string) (uid, gid int, err error) {
	id, err := slotIdentity(p, slot)
	return id.uid, id.gid, err
}

// CheckUsers resolves every slot user p names, SLOT_USER's default
// included, and refuses root unless p allows it.
func (p Policy) CheckUsers() error {
	slots := []string{""} // the default's
	for slot := range p.SlotUsers {
		if err := checkSlot(slot); err != nil {
			return err
		}
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	var errs []error
	for _, slot := range slots {
		if _, err := slotIdentity(p, slot); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// slotUserName is the name of the user the plain-process jobs of slot
// run as; "" names the user of the jobs in containers.
func (p Policy) slotUserName(slot string) string {
	if name := p.SlotUsers[slot]; name != "" {
		return name
	}
	if parent, _, dynamic := strings.Cut(slot, "_"); dynamic && p.SlotUsers[parent] != "" {
		return p.SlotUsers[parent]
	}
	if p.User != "" {
		return p.User
	}
	return defaultUser
}

func slotIdentity(p Policy, slot string) (identity, error) {
	name := p.slotUserName(slot)
	id, err := lookupUser(name)
	if err != nil {
		return identity{}, err
	}
	if id.uid == 0 && !p.AllowRoot {
		return identity{}, fmt.Errorf("slot user %s is root and root jobs are not allowed", name)
	}
	return id, nil
}

// checkSlot accepts slot names that are safe in a path and a container
// ID.
func checkSlot(slot string) error {
	if slot == "" {
		return errors.New("no slot name")
	}
	for _, r := range slot {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("slot name %q: only letters, digits and _ are allowed", slot)
		}
	}
	return nil
}

// lookupUser resolves a user name or a numeric uid.
func lookupUser(name string) (identity, error) {
	var (
		u   *user.User
		err error
	)
	if _, nerr := strconv.Atoi(name); nerr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return identity{}, fmt.Errorf("slot user %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return identity{}, fmt.Errorf("slot user %s: %w", name, err)
	}
	return identity{name: u.Username, uid: uid, gid: gid}, nil
}

// containerID names a job's container: the slot, then the job ID with
// anything libcontainer does not accept replaced.
func containerID(slot, jobID string) string {
	if jobID == "" {
		jobID = "job"
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '+' || r == '_' {
			return r
		}
		return '_'
	}, jobID)
	return slot + "-" + clean
}

// StateRoot is the state root of the startd whose execute directory is
// executeDir: the startd and its starters agree on it this way.
func StateRoot(executeDir string) string { return filepath.Join(executeDir, "sandbox") }

// policyFile is the Policy's name in the state root.
const policyFile = "policy.json"

// WritePolicy saves p in stateRoot for the starters to read.
func WritePolicy(stateRoot string, p Policy) error {
	if err := os.MkdirAll(stateRoot, 0o700); err != nil {
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	tmp := filepath.Join(stateRoot, policyFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(stateRoot, policyFile)); err != nil {
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	return nil
}

// ReadPolicy reads the Policy saved in stateRoot; with none saved it is
// the zero Policy, all defaults.
func ReadPolicy(stateRoot string) (Policy, error) {
	var p Policy
	b, err := os.ReadFile(filepath.Join(stateRoot, policyFile))
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("read sandbox policy: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("read sandbox policy %s: %w", filepath.Join(stateRoot, policyFile), err)
	}
	return p, nil
}

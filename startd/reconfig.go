package startd

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"harrier.dev/harrier/gpu"
)

// Reconfigure applies a re-read configuration to the running startd
// without touching its claims or jobs: the owner policy (START, RANK,
// SUSPEND, CONTINUE, PREEMPT, KILL, WANT_SUSPEND, WANT_VACATE, IS_OWNER,
// MACHINE_MAX_VACATE_TIME), the polling interval, the claim lease and the
// scratch limit take effect at the next evaluation; a running job is
// judged by the new policy from then on as any job would be (a START that
// turns false stops new jobs, it does not evict running ones; PREEMPT
// does). The other settings need a restart: Reconfigure names those that
// changed (by their configuration keys) and keeps their old values. A
// configuration that does not check (an expression that does not parse)
// is refused whole, and the startd runs on as it was.
func (s *Startd) Reconfigure(cfg Config) (restart []string, err error) {
	// withDefaults needs what New needed; the settings it checks that
	// cannot change are taken from the running startd's.
	next, pol, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("reconfigure: %w", err)
	}
	s.mu.Lock()
	restart = needRestart(s.cfg, next)
	if s.adc.draining {
		// Draining holds START false until cancelled.
		s.configuredStart, pol.start = pol.start, s.drainingStart()
	}
	s.adc.policy = pol
	s.cfg.Start, s.cfg.Rank = next.Start, next.Rank
	s.cfg.Suspend, s.cfg.Continue, s.cfg.Preempt, s.cfg.Kill = next.Suspend, next.Continue, next.Preempt, next.Kill
	s.cfg.WantSuspend, s.cfg.WantVacate, s.cfg.IsOwner = next.WantSuspend, next.WantVacate, next.IsOwner
	s.cfg.MaxVacateTime, s.cfg.MaxJobRetirementTime = next.MaxVacateTime, next.MaxJobRetirementTime
	s.cfg.PollingInterval = next.PollingInterval
	s.cfg.ClaimLease = next.ClaimLease
	s.cfg.ScratchLimitKB = next.ScratchLimitKB
	s.cfg.ThreadEnvVars = next.ThreadEnvVars
	s.mu.Unlock()
	s.log.Info("reconfigured", "start", next.Start, "polling_interval", next.PollingInterval, "claim_lease", next.ClaimLease)
	s.notify() // the ads show the new policy
	return restart, nil
}

// needRestart names the settings that differ between a running startd's
// configuration and a new one and that only a restart applies.
func needRestart(old, next Config) []string {
	var names []string
	for name, same := range map[string]bool{
		"STARTD_NAME":         old.Name == next.Name,
		"MATCHMAKER_ADDR":     old.MatchmakerAddr == next.MatchmakerAddr,
		"NUM_SLOTS":           old.NumSlots == next.NumSlots,
		"SLOT_TYPE_<n>":       slices.Equal(old.SlotTypes, next.SlotTypes),
		"NUM_CPUS":            old.NumCPUs == next.NumCPUs,
		"MEMORY":              old.MemoryMiB == next.MemoryMiB,
		"ASSIGN_CPU_AFFINITY": old.AssignCPUAffinity == next.AssignCPUAffinity,
		"EXECUTE":             old.ExecuteDir == next.ExecuteDir,
		"SANDBOX":             old.Sandbox == next.Sandbox,
		"UPDATE_INTERVAL":     old.AdvertiseInterval == next.AdvertiseInterval,
		"TERMINAL_DEVICES":    slices.Equal(old.Terminals, next.Terminals),
		"CONSOLE_DEVICES":     slices.Equal(old.ConsoleDevices, next.ConsoleDevices),
		"CHECKPOINT_KEY_FILE": old.CheckpointKeyFile == next.CheckpointKeyFile,
		"GPU_DEVICES":         slices.Equal(gpu.IDs(old.GPUs.Devices), gpu.IDs(next.GPUs.Devices)),
		"STARTD_CRON_JOBLIST": reflect.DeepEqual(old.Cron, next.Cron),
		"STARTD_CRON_USER":    old.CronUser == next.CronUser,
		"starter command":     reflect.DeepEqual(old.StarterCommand, next.StarterCommand),
	} {
		if !same {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// pollingInterval is the current polling interval.
func (s *Startd) pollingInterval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.PollingInterval
}

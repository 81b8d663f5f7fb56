package main

import (
	"errors"
	"strings"
	"time"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/startd"
)

// desktopPolicy is the template behind "use POLICY : Desktop": HTCondor's
// desktop policy, for machines that have an owner at the keyboard. A job
// starts only after the keyboard has been idle for DESKTOP_IDLE_TIME and
// the load that is not Harrier's is low; it is suspended as soon as the
// owner types (or their load rises), continues once they have been away
// for DESKTOP_CONTINUE_IDLE_TIME, and is vacated (to run again elsewhere)
// once it has been suspended for DESKTOP_MAX_SUSPEND_TIME.
//
// Every number is a macro so that an owner (or a test) can change it after
// the use line. DESKTOP_BUSY_TIME must stay above 8 s: the kernel moves a
// terminal's access time at most once per 8-second window, so a typing
// owner can look up to 8 s idle. DESKTOP_WELCOME_JOBS says which jobs are
// welcome at all, e.g. TARGET.Owner != "mallory"; RANK, which are
// preferred, e.g. TARGET.Department == "Physics".
const desktopPolicy = `
MINUTE = 60
DESKTOP_IDLE_TIME = 15 * $(MINUTE)
DESKTOP_BUSY_TIME = $(MINUTE)
DESKTOP_CONTINUE_IDLE_TIME = 5 * $(MINUTE)
DESKTOP_MAX_SUSPEND_TIME = 10 * $(MINUTE)
DESKTOP_MAX_VACATE_TIME = 10 * $(MINUTE)
DESKTOP_BACKGROUND_LOAD = 0.3
DESKTOP_HIGH_LOAD = 0.5
DESKTOP_WELCOME_JOBS = true

DESKTOP_NON_HARRIER_LOAD = (LoadAvg - CondorLoadAvg)
DESKTOP_ACTIVITY_TIME = (MyCurrentTime - EnteredCurrentActivity)
DESKTOP_KEYBOARD_BUSY = (KeyboardIdle < ($(DESKTOP_BUSY_TIME)))
DESKTOP_CPU_IDLE = ($(DESKTOP_NON_HARRIER_LOAD) <= ($(DESKTOP_BACKGROUND_LOAD)))
DESKTOP_CPU_BUSY = ($(DESKTOP_NON_HARRIER_LOAD) >= ($(DESKTOP_HIGH_LOAD)))

START = ($(DESKTOP_WELCOME_JOBS)) && KeyboardIdle > ($(DESKTOP_IDLE_TIME)) && $(DESKTOP_CPU_IDLE)
WANT_SUSPEND = true
SUSPEND = $(DESKTOP_KEYBOARD_BUSY) || $(DESKTOP_CPU_BUSY)
CONTINUE = $(DESKTOP_CPU_IDLE) && KeyboardIdle > ($(DESKTOP_CONTINUE_IDLE_TIME))
PREEMPT = Activity == "Suspended" && $(DESKTOP_ACTIVITY_TIME) > ($(DESKTOP_MAX_SUSPEND_TIME))
WANT_VACATE = true
KILL = false
MACHINE_MAX_VACATE_TIME = $(DESKTOP_MAX_VACATE_TIME)
IS_OWNER = (START =?= false)
`

// alwaysRunJobsPolicy is the template behind "use POLICY :
// Always_Run_Jobs": a dedicated machine that runs any job at once and never
// disturbs it. It is also what a pool without a policy does.
const alwaysRunJobsPolicy = `
START = true
SUSPEND = false
CONTINUE = true
PREEMPT = false
KILL = false
WANT_SUSPEND = false
WANT_VACATE = true
IS_OWNER = false
`

// configOptions returns the options every pool configuration is read with:
// the policy templates registered for "use POLICY : NAME".
func configOptions() *config.Options {
	var o config.Options
	o.RegisterTemplate("POLICY", "Desktop", desktopPolicy)
	o.RegisterTemplate("POLICY", "Always_Run_Jobs", alwaysRunJobsPolicy)
	return &o
}

// startdPolicy reads the owner policy and its timing from the pool
// configuration into cfg.
func startdPolicy(pc *poolConfig, cfg *startd.Config) error {
	for key, dst := range map[string]*string{
		"START": &cfg.Start, "RANK": &cfg.Rank, "SUSPEND": &cfg.Suspend, "CONTINUE": &cfg.Continue,
		"PREEMPT": &cfg.Preempt, "KILL": &cfg.Kill, "WANT_SUSPEND": &cfg.WantSuspend,
		"WANT_VACATE": &cfg.WantVacate, "IS_OWNER": &cfg.IsOwner, "MACHINE_MAX_VACATE_TIME": &cfg.MaxVacateTime,
		"MAXJOBRETIREMENTTIME": &cfg.MaxJobRetirementTime,
	} {
		v, err := pc.c.Expand(key)
		if err != nil && !errors.Is(err, config.ErrNotDefined) {
			return err
		}
		*dst = strings.TrimSpace(v)
	}
	var err error
	if cfg.PollingInterval, err = pc.c.Duration("POLLING_INTERVAL", time.Second); err != nil {
		return err
	}
	if cfg.ClaimLease, err = pc.c.Duration("CLAIM_LEASE", 60*time.Second); err != nil {
		return err
	}
	if cfg.ScratchLimitKB, err = pc.c.Int("SCRATCH_LIMIT", 0); err != nil {
		return err
	}
	cfg.Terminals = deviceList(pc, "TERMINAL_DEVICES")
	cfg.ConsoleDevices = deviceList(pc, "CONSOLE_DEVICES")
	return nil
}

// deviceList reads a list of device patterns separated by spaces or
// commas: nil if key is not defined (the startd's default), empty if it is
// defined empty (watch nothing).
func deviceList(pc *poolConfig, key string) []string {
	v, ok := pc.c.Lookup(key)
	if !ok {
		return nil
	}
	return append([]string{}, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })...)
}

package startd

import (
	"runtime/debug"
	"time"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
)

// adConfig is what the machine ads take from the configuration.
type adConfig struct {
	host   string
	addr   string // StartdAddr
	policy policy
	// numSlots is the number of configured (static and partitionable)
	// slots, among which an unspecified share is split evenly.
	numSlots int
	version  string
	sandbox  string // HarrierSandbox: "container" or "process"
	// draining: the machine is out of service, drained or stopping
	// peacefully; policy.start is then false. drained: an administrator's
	// drain holds it (see Drain), drainReason says why (DrainReason), and
	// the running jobs leave when their retirement ends.
	draining, drained bool
	drainReason       string
	drainStarted      time.Time // LastDrainStartTime
	gpus              gpuShare  // see gpus.go
	cron              cronAttrs // see cron.go
	// pluginMethods is HasFileTransferPluginMethods: the URL schemes
	// the starters move, built in or by a plugin.
	pluginMethods string
	// ckptPlatform is CheckpointPlatform; "" where the machine cannot
	// restore checkpoints (it advertises none).
	ckptPlatform string
}

// machineAd builds the ad of one slot from a measurement of the whole
// machine. It is a pure function of its arguments.
func machineAd(c adConfig, m machine, v view, now time.Time) *classad.ClassAd {
	n := int64(max(c.numSlots, 1))
	have, total := v.resources(m, c.numSlots)
	ad := classad.New()
	// First, so that what the startd sets itself wins.
	for name, e := range c.policy.attrs {
		ad.Set(name, e)
	}
	c.cron.publish(ad)
	ad.SetString("MyType", "Machine")
	ad.SetString("TargetType", "Job")
	ad.SetString("Name", v.name)
	ad.SetString("Machine", c.host)
	ad.SetString("StartdAddr", c.addr)
	ad.SetInt("SlotID", int64(v.slotID))
	state, activity := drainingStatus(c.drained, v.status)
	ad.SetString("State", string(state))
	ad.SetString("Activity", string(activity))
	ad.SetInt("EnteredCurrentState", v.enteredState.Unix())
	ad.SetInt("EnteredCurrentActivity", v.enteredActivity.Unix())
	ad.Set("Requirements", c.policy.start)
	ad.Set("Start", c.policy.start)
	ad.Set("Rank", c.policy.rank)
	ad.SetBool("Draining", c.draining)
	if c.drained {
		ad.SetString("DrainReason", c.drainReason)
		ad.SetInt("LastDrainStartTime", c.drainStarted.Unix())
	}
	ad.SetString("Arch", m.arch)
	ad.SetString("OpSys", "LINUX")
	ad.SetString("OpSysAndVer", m.opSysAndVer)
	ad.SetInt("Cpus", have.cpus)
	ad.SetInt("Memory", have.memoryMiB)
	ad.SetInt("Disk", have.diskKiB)
	ad.SetInt("TotalSlotCpus", total.cpus)
	ad.SetInt("TotalSlotMemory", total.memoryMiB)
	ad.SetInt("TotalSlotDisk", total.diskKiB)
	ad.SetString("SlotType", v.kind.slotType())
	switch v.kind {
	case partitionable:
		// What the negotiator subtracts a match's request from to go on
		// matching the slot in the same cycle (HTCondor's consumption
		// policy; see matchmaker/partitionable.go).
		ad.SetBool("PartitionableSlot", true)
		// As HTCondor: each dynamic slot's share, in lists.
		cpus := make([]classad.Value, len(v.children))
		memory := make([]classad.Value, len(v.children))
		disk := make([]classad.Value, len(v.children))
		for i, c := range v.children {
			cpus[i], memory[i], disk[i] = classad.Int(c.cpus), classad.Int(c.memoryMiB), classad.Int(c.diskKiB)
		}
		ad.SetInt("NumDynamicSlots", int64(len(v.children)))
		ad.SetValue("ChildCpus", classad.List(cpus...))
		ad.SetValue("ChildMemory", classad.List(memory...))
		ad.SetValue("ChildDisk", classad.List(disk...))
	case dynamic:
		ad.SetBool("DynamicSlot", true)
	}
	ad.SetInt("TotalCpus", int64(m.cpus))
	ad.SetInt("TotalMemory", m.memoryMiB)
	ad.SetInt("TotalDisk", m.diskKiB)
	ad.SetInt("TotalSlots", n)
	c.gpus.publish(ad, v)
	// LoadAvg is the slot's share: its own job's load plus an even share
	// of the load that is not Harrier's, as in HTCondor, so that
	// LoadAvg - CondorLoadAvg is the owner's load whatever the slot.
	var harrierLoad float64
	for _, l := range m.condorLoads {
		harrierLoad += l
	}
	own := m.condorLoads[v.id]
	ad.SetReal("TotalLoadAvg", m.loadAvg)
	ad.SetReal("TotalCondorLoadAvg", harrierLoad)
	ad.SetReal("CondorLoadAvg", own)
	ad.SetReal("LoadAvg", own+max(m.loadAvg-harrierLoad, 0)/float64(n))
	ad.SetInt("KeyboardIdle", int64(m.keyboardIdle/time.Second))
	ad.SetInt("ConsoleIdle", int64(m.consoleIdle/time.Second))
	ad.SetInt("MyCurrentTime", now.Unix())
	ad.SetString("HarrierVersion", c.version)
	ad.SetString("HarrierSandbox", c.sandbox)
	ad.SetBool("HasFileTransfer", true)
	ad.SetString("HasFileTransferPluginMethods", c.pluginMethods)
	// Jobs in their own container images (universe = container or
	// docker) need a container; submit requires these, as HTCondor's does.
	// CachedImages names the images the machine holds, for a job's
	// image to be preferred where it need not be pulled.
	if c.sandbox == "container" {
		ad.SetBool("HasContainer", true)
		ad.SetBool("HasDocker", true)
		names := make([]classad.Value, len(m.cachedImages))
		for i, n := range m.cachedImages {
			names[i] = classad.String(n)
		}
		ad.SetValue("CachedImages", classad.List(names...))
	}
	// A job checkpointed on one platform asks for it (see
	// checkpoint.Platform).
	if c.ckptPlatform != "" {
		ad.SetString(checkpoint.AttrPlatform, c.ckptPlatform)
	}
	if cl := v.claim; cl != nil {
		ad.SetString("ClaimedBy", cl.agent)
		if cl.owner != "" {
			ad.SetString("RemoteOwner", cl.owner)
		}
		if cl.jobID != "" {
			ad.SetString("JobId", cl.jobID)
		}
		if v.status.Activity == Busy {
			ad.SetInt("JobStart", v.enteredActivity.Unix())
		}
		// What the matchmaker's reservations read of the job: the
		// reservation it runs in, its declared run time, its priority.
		if v.job != nil {
			for _, name := range reservationJobAttrs {
				if e, ok := v.job.Lookup(name); ok {
					ad.Set(name, classad.Literal(v.job.EvalExpr(e, nil)))
				}
			}
		}
		// The licenses a gang's claim holds, for as long as it lasts: the
		// matchmaker counts license seats in use from these.
		// And the concurrency limits its job uses, from which the
		// matchmaker counts each limit's use.
		if cl.job != nil {
			if l, ok := cl.job.Lookup(attrGangLicenses); ok {
				ad.Set(attrGangLicenses, l)
			}
			if l, ok := cl.job.EvalString(attrConcurrencyLimits); ok && l != "" {
				ad.SetString(attrConcurrencyLimits, l)
			}
			// And whom the slot is charged to, when not its owner: the
			// accounting group its job runs in.
			if g, ok := cl.job.EvalString(attrAccountingGroup); ok && g != "" {
				ad.SetString(attrAccountingGroup, g)
			}
		}
		// How much the machine's RANK likes the job it has: the
		// negotiator lets only a job it ranks higher preempt this one.
		ad.SetReal("CurrentRank", classad.Rank(ad, v.job))
	}
	return ad
}

// resources returns what the slot of v has to offer and what it holds in
// all on machine m, which has slots configured slots: a partitionable
// slot offers what its dynamic slots left.
func (v view) resources(m machine, slots int) (have, total resources) {
	switch v.kind {
	case dynamic:
		return v.size, v.size
	case partitionable:
		total = v.share.of(m, slots)
		total.gpus = int64(len(v.gpus))
		left := total.minus(v.used)
		return resources{max(left.cpus, 0), max(left.memoryMiB, 0), max(left.diskKiB, 0), max(left.gpus, 0)}, total
	}
	total = v.share.of(m, slots)
	total.gpus = int64(len(v.gpus))
	return total, total
}

// reservationJobAttrs are the job's attributes a claimed slot's ad
// carries for the matchmaker's reservations (reservation.AttrReservationID
// and AttrEstimatedRunTime, and JobPrio for the policy's job records).
var reservationJobAttrs = []string{"ReservationId", "EstimatedRunTime", "JobPrio"}

// version is the Harrier module version this binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

package startd

import (
	"runtime/debug"
	"time"

	"harrier.dev/harrier/classad"
)

// adConfig is what the machine ads take from the configuration.
type adConfig struct {
	host     string
	addr     string // StartdAddr
	policy   policy
	numSlots int
	version  string
}

// machineAd builds the ad of one slot from a measurement of the whole
// machine. It is a pure function of its arguments.
func machineAd(c adConfig, m machine, v view, now time.Time) *classad.ClassAd {
	n := int64(max(c.numSlots, 1))
	ad := classad.New()
	ad.SetString("MyType", "Machine")
	ad.SetString("TargetType", "Job")
	ad.SetString("Name", v.name)
	ad.SetString("Machine", c.host)
	ad.SetString("StartdAddr", c.addr)
	ad.SetInt("SlotID", int64(v.id))
	ad.SetString("State", string(v.status.State))
	ad.SetString("Activity", string(v.status.Activity))
	ad.SetInt("EnteredCurrentState", v.enteredState.Unix())
	ad.SetInt("EnteredCurrentActivity", v.enteredActivity.Unix())
	ad.Set("Requirements", c.policy.start)
	ad.Set("Start", c.policy.start)
	ad.Set("Rank", c.policy.rank)
	ad.SetString("Arch", m.arch)
	ad.SetString("OpSys", "LINUX")
	ad.SetString("OpSysAndVer", m.opSysAndVer)
	ad.SetInt("Cpus", max(int64(m.cpus)/n, 1))
	ad.SetInt("Memory", m.memoryMiB/n)
	ad.SetInt("Disk", m.diskKiB/n)
	ad.SetInt("TotalCpus", int64(m.cpus))
	ad.SetInt("TotalMemory", m.memoryMiB)
	ad.SetInt("TotalSlots", n)
	ad.SetReal("LoadAvg", m.loadAvg)
	idle := int64(m.idle / time.Second)
	ad.SetInt("KeyboardIdle", idle)
	ad.SetInt("ConsoleIdle", idle)
	ad.SetInt("MyCurrentTime", now.Unix())
	ad.SetString("HarrierVersion", c.version)
	if cl := v.claim; cl != nil {
		ad.SetString("ClaimedBy", cl.agent)
		if cl.owner != "" {
			ad.SetString("RemoteOwner", cl.owner)
		}
		if cl.jobID != "" {
			ad.SetString("JobId", cl.jobID)
		}
	}
	return ad
}

// version is the Harrier module version this binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

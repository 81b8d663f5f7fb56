package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/sandbox"
)

// partitionableConf makes the startd a 4-CPU machine, whatever the
// hardware, with one partitionable slot of all of it.
const partitionableConf = `NUM_CPUS = 4
MEMORY = 4096
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = true
NEGOTIATOR_INTERVAL = 2
`

// machineSandbox is how the pool's startd runs jobs (HarrierSandbox).
func (p *testPool) machineSandbox(t *testing.T) string {
	t.Helper()
	for _, ad := range p.poolAds(t, "Machine") {
		if s, ok := ad.EvalString("HarrierSandbox"); ok {
			return s
		}
	}
	return ""
}

// slotAds returns the pool's machine ads by slot name.
func (p *testPool) slotAds(t *testing.T) map[string]*classad.ClassAd {
	t.Helper()
	ads := map[string]*classad.ClassAd{}
	for _, ad := range p.poolAds(t, "Machine") {
		name, _ := ad.EvalString("Name")
		ads[name] = ad
	}
	return ads
}

// containerLimits returns the memory limit (bytes) and CPU shares of the
// job containers of the pool's startd, by slot ("slot1_2").
func (p *testPool) containerLimits(t *testing.T) map[string][2]int64 {
	t.Helper()
	read := func(hierarchy, file string) map[string]int64 {
		values := map[string]int64{}
		for slot, text := range p.containerFiles(hierarchy, file) {
			v, _ := strconv.ParseInt(text, 10, 64)
			values[slot] = v
		}
		return values
	}
	shares := read("cpu", "cpu.shares")
	limits := map[string][2]int64{}
	for slot, mem := range read("memory", "memory.limit_in_bytes") {
		limits[slot] = [2]int64{mem, shares[slot]}
	}
	return limits
}

// cgroupBase is the cgroup of every slot of the pool's startd on this
// machine, relative to its own: harrier/<hash of the sandbox state root>.
func (p *testPool) cgroupBase() string {
	sum := sha256.Sum256([]byte(filepath.Clean(sandbox.StateRoot(filepath.Join(p.dir, "execute", hostName())))))
	return filepath.Join("harrier", hex.EncodeToString(sum[:6]))
}

// cgroups lists the startd's slot cgroups (see cgroupBase) in every
// hierarchy.
func (p *testPool) cgroups() []string {
	var found []string
	for depth := range 6 {
		m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", strings.Repeat("*/", depth), p.cgroupBase()))
		found = append(found, m...)
	}
	return found
}

// containerFiles returns, by slot, the contents of file in a cgroup v1
// hierarchy for each job container of the pool's startd, whose cgroup
// sits under harrier/<hash of the sandbox state root>/<slot> of the
// starter's own.
func (p *testPool) containerFiles(hierarchy, file string) map[string]string {
	base := p.cgroupBase()
	values := map[string]string{}
	for depth := range 5 {
		files, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", hierarchy, strings.Repeat("*/", depth), base, "slot*", "*", file))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			values[filepath.Base(filepath.Dir(filepath.Dir(f)))] = strings.TrimSpace(string(b))
		}
	}
	return values
}

// TestPartitionableSlots: a 4-CPU partitionable startd runs four 1-CPU
// jobs of two users at once, each in a dynamic slot of its own whose
// container is held to the job's request, then, once they are gone, two
// 4-CPU jobs in turn under one claim; a job asking for more CPUs than any
// machine has stays Idle, and -better-analyze says which condition no
// machine meets.
func TestPartitionableSlots(t *testing.T) {
	p := startPoolFrom(t, publicBinary(t), 1, partitionableConf)
	pslot := "slot1@" + hostName()
	eventually(t, time.Minute, "the partitionable slot with 4 CPUs", func() bool {
		ad := p.slotAds(t)[pslot]
		if ad == nil {
			return false
		}
		part, _ := ad.EvalBool("PartitionableSlot")
		cpus, _ := ad.EvalInt("Cpus")
		typ, _ := ad.EvalString("SlotType")
		return part && cpus == 4 && typ == "Partitionable"
	})

	alice, bob := newUser(t), newUser(t)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	small := "executable = /bin/sleep\narguments = 600\nrequest_cpus = 1\nrequest_memory = 256\nqueue 2\n"
	var ids []string
	owners := map[string]string{}
	for _, u := range []string{alice.Username, bob.Username} {
		c := p.submitAs(t, u, dir, u+".sub", small)
		for proc := range 2 {
			id := fmt.Sprintf("%d.%d", c, proc)
			ids = append(ids, id)
			owners[id] = u
		}
	}
	eventually(t, 2*time.Minute, "the four 1-CPU jobs to run at once", func() bool {
		for _, id := range ids {
			if p.jobStatus(t, id) != 2 {
				return false
			}
		}
		return true
	})
	// Four dynamic slots of one CPU, claimed by both users; the
	// partitionable slot advertises nothing left.
	eventually(t, time.Minute, "four dynamic slots and an empty partitionable slot", func() bool {
		ads := p.slotAds(t)
		claimedBy := map[string]int{}
		for name, ad := range ads {
			if dyn, _ := ad.EvalBool("DynamicSlot"); !dyn {
				continue
			}
			cpus, _ := ad.EvalInt("Cpus")
			owner, _ := ad.EvalString("RemoteOwner")
			if !strings.HasPrefix(name, "slot1_") || cpus != 1 {
				return false
			}
			claimedBy[owner]++
		}
		left, _ := ads[pslot].EvalInt("Cpus")
		return left == 0 && claimedBy[alice.Username] == 2 && claimedBy[bob.Username] == 2
	})
	// In containers, each job is held to its dynamic slot: 256 MiB and
	// one CPU's shares.
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil && p.machineSandbox(t) == "container" {
		eventually(t, time.Minute, "four containers limited to their dynamic slots", func() bool {
			limits := p.containerLimits(t)
			for slot, l := range limits {
				if !strings.HasPrefix(slot, "slot1_") || l != [2]int64{256 << 20, 1024} {
					t.Logf("container of %s: memory %d, CPU shares %d", slot, l[0], l[1])
					return false
				}
			}
			return len(limits) == 4
		})
	}
	for _, ad := range p.jobs(t, "q", ids...) {
		host, _ := ad["RemoteHost"].(string)
		if !strings.HasPrefix(host, "slot1_") {
			t.Errorf("job %v runs on %q, want a dynamic slot", ad["ClusterId"], host)
		}
	}

	big := fmt.Sprintf("%d.0", p.submitAs(t, alice.Username, dir, "big.sub", "executable = /bin/true\nrequest_cpus = 5\nqueue\n"))
	out := p.must(t, "q", "-better-analyze", big)
	if !strings.Contains(out, "matches no machine: TARGET.Cpus >= RequestCpus") {
		t.Errorf("-better-analyze of a 5-CPU job on a 4-CPU pool does not blame its CPUs:\n%s", out)
	}

	// One user may not remove another's jobs; each removes their own,
	// and the dynamic slots return their CPUs.
	if out, code := harrierAs(t, p.env, bob.Username, "rm", ids[0]); code == 0 {
		t.Errorf("bob removed alice's job %s: %s", ids[0], out)
	}
	for _, id := range ids {
		if out, code := harrierAs(t, p.env, owners[id], "rm", id); code != 0 {
			t.Fatalf("rm %s: exit %d: %s", id, code, out)
		}
	}
	// Two 4-CPU jobs of one user: the claim on the first one's dynamic
	// slot runs the second too (claim reuse), so one slot is carved.
	c := p.submitAs(t, bob.Username, dir, "four.sub", "executable = /bin/sleep\narguments = 1\nrequest_cpus = 4\nrequest_memory = 1024\nlog = four.log\nqueue 2\n")
	var hosts []string
	for proc := range 2 {
		id := fmt.Sprintf("%d.%d", c, proc)
		if out, code := p.harrier(t, "wait", "--timeout", "180", id); code != 0 {
			t.Fatalf("4-CPU job %s did not complete: exit %d: %s", id, code, out)
		}
		hosts = append(hosts, fmt.Sprint(p.historyAd(t, id)["LastRemoteHost"]))
	}
	if !strings.HasPrefix(hosts[0], "slot1_") || hosts[1] != hosts[0] {
		t.Errorf("the 4-CPU jobs ran on %v, want one dynamic slot, reused", hosts)
	}
	carved := 0
	for _, line := range strings.Split(readLog(t, filepath.Join(p.dir, "log", p.startdLog(t)+".log")), "\n") {
		if strings.Contains(line, `msg="dynamic slot carved"`) && strings.Contains(line, `resources="cpus=4,`) {
			carved++
		}
	}
	if carved != 1 {
		t.Errorf("the startd carved %d 4-CPU dynamic slots, want 1", carved)
	}
	if st := p.jobStatus(t, big); st != 1 {
		t.Errorf("the 5-CPU job's JobStatus is %d, want 1 (idle)", st)
	}
}

// TestPartitionableCPUAffinity: with ASSIGN_CPU_AFFINITY, two 1-CPU jobs
// on a 2-core partitionable slot each run pinned to a core of their own.
func TestPartitionableCPUAffinity(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 cores")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpuset/cpuset.cpus"); err != nil {
		t.Skip("needs the cgroup v1 cpuset hierarchy")
	}
	p := startPoolFrom(t, publicBinary(t), 1, "NUM_CPUS = 2\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = true\nASSIGN_CPU_AFFINITY = true\nNEGOTIATOR_INTERVAL = 2\n")
	if p.machineSandbox(t) != "container" {
		t.Skip("jobs run as plain processes here")
	}
	alice := newUser(t)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	c := p.submitAs(t, alice.Username, dir, "pinned.sub", "executable = /bin/sleep\narguments = 600\nrequest_cpus = 1\nqueue 2\n")
	ids := []string{fmt.Sprintf("%d.0", c), fmt.Sprintf("%d.1", c)}
	eventually(t, 2*time.Minute, "both jobs to run", func() bool { return p.jobStatus(t, ids[0]) == 2 && p.jobStatus(t, ids[1]) == 2 })
	eventually(t, time.Minute, "each container pinned to a core of its own", func() bool {
		sets := p.containerFiles("cpuset", "cpuset.cpus")
		cores := map[string]bool{}
		for _, set := range sets {
			cores[set] = true
		}
		t.Logf("cpusets %v", sets)
		return len(sets) == 2 && cores["0"] && cores["1"]
	})
	for _, id := range ids {
		p.must(t, "rm", id)
	}
}

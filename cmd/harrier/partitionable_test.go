package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
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

// TestPartitionableSlots: a 4-CPU partitionable startd runs four 1-CPU
// jobs of two users at once, each in a dynamic slot of its own carved in
// one negotiation cycle or more, then, once they are gone, a 4-CPU job;
// a job asking for more CPUs than any machine has stays Idle, and
// -better-analyze says which condition no machine meets.
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
	four := fmt.Sprintf("%d.0", p.submitAs(t, bob.Username, dir, "four.sub", "executable = /bin/sleep\narguments = 1\nrequest_cpus = 4\nrequest_memory = 1024\nlog = four.log\nqueue\n"))
	if out, code := p.harrier(t, "wait", "--timeout", "180", four); code != 0 {
		t.Fatalf("the 4-CPU job did not complete: exit %d: %s", code, out)
	}
	if ad := p.historyAd(t, four); !strings.HasPrefix(fmt.Sprint(ad["LastRemoteHost"]), "slot1_") {
		t.Errorf("the 4-CPU job ran on %v, want a dynamic slot", ad["LastRemoteHost"])
	}
	if log := readLog(t, filepath.Join(p.dir, "log", p.startdLog(t)+".log")); !strings.Contains(log, `resources="cpus=4, memory=1024 MiB`) {
		t.Errorf("the startd's log shows no 4-CPU dynamic slot")
	}
	if st := p.jobStatus(t, big); st != 1 {
		t.Errorf("the 5-CPU job's JobStatus is %d, want 1 (idle)", st)
	}
}

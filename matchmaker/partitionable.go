package matchmaker

import (
	"harrier.dev/harrier/classad"
)

// Attributes of partitionable slots, as HTCondor names them.
const (
	// AttrPartitionableSlot is true in the ad of a partitionable slot: a
	// match carves a dynamic slot of the job's size out of it, and the
	// slot stays Unclaimed with what is left.
	AttrPartitionableSlot = "PartitionableSlot"
)

// quantity is what a job takes of a partitionable slot, and what the slot
// has left: HTCondor's consumption policy for Cpus, Memory, Disk and GPUs.
type quantity struct {
	cpus, memory, disk, gpus int64
}

// requestQuantity is what a job's ad requests: RequestCpus (at least one),
// RequestMemory, RequestDisk and RequestGPUs, as the startd carves them.
func requestQuantity(job *classad.ClassAd) quantity {
	var q quantity
	q.cpus, _ = job.EvalInt("RequestCpus")
	q.memory, _ = job.EvalInt("RequestMemory")
	q.disk, _ = job.EvalInt("RequestDisk")
	q.gpus, _ = job.EvalInt("RequestGPUs")
	return quantity{max(q.cpus, 1), max(q.memory, 0), max(q.disk, 0), max(q.gpus, 0)}
}

// slotQuantity is what a partitionable slot's ad has left.
func slotQuantity(ad *classad.ClassAd) quantity {
	var q quantity
	q.cpus, _ = ad.EvalInt("Cpus")
	q.memory, _ = ad.EvalInt("Memory")
	q.disk, _ = ad.EvalInt("Disk")
	q.gpus, _ = ad.EvalInt("GPUs")
	return q
}

func (q quantity) covers(o quantity) bool {
	return q.cpus >= o.cpus && q.memory >= o.memory && q.disk >= o.disk && q.gpus >= o.gpus
}

// setIn writes q into ad as what the slot has left; GPUs only into the ad
// of a machine that has them.
func (q quantity) setIn(ad *classad.ClassAd) {
	ad.SetInt("Cpus", q.cpus)
	ad.SetInt("Memory", q.memory)
	ad.SetInt("Disk", q.disk)
	if _, ok := ad.Lookup("GPUs"); ok {
		ad.SetInt("GPUs", q.gpus)
	}
}

// isPartitionable reports whether ad is a partitionable slot's.
func isPartitionable(ad *classad.ClassAd) bool {
	b, _ := ad.EvalBool(AttrPartitionableSlot)
	return b
}

// consume returns a copy of the partitionable slot's ad with what job
// requests taken from its Cpus, Memory and Disk.
func consume(slot, job *classad.ClassAd) *classad.ClassAd {
	left, need := slotQuantity(slot), requestQuantity(job)
	ad := slot.Copy()
	quantity{max(left.cpus-need.cpus, 0), max(left.memory-need.memory, 0), max(left.disk-need.disk, 0), max(left.gpus-need.gpus, 0)}.setIn(ad)
	return ad
}

// whole returns a copy of a partitionable slot's ad with its totals
// (TotalSlotCpus, TotalSlotMemory, TotalSlotDisk, TotalSlotGPUs) as what
// it has left.
func whole(slot *classad.ClassAd) *classad.ClassAd {
	ad := slot.Copy()
	for _, name := range []string{"Cpus", "Memory", "Disk", "GPUs"} {
		if total, ok := slot.EvalInt("TotalSlot" + name); ok {
			ad.SetInt(name, total)
		}
	}
	return ad
}

// partSlot is a partitionable slot in one negotiation: the negotiator's
// own copy of its ad, from which each match subtracts its request so that
// the next match sees what is left.
type partSlot struct {
	m    Machine // as advertised; matches name it
	ad   *classad.ClassAd
	left quantity
}

// partPlan is a plan's progress through the partitionable slots.
type partPlan struct {
	need quantity // what each of its jobs takes
	// cursor: the slots before it cannot take need.
	cursor int
}

// partitionableRequestAttrs are the job attributes a match against a
// partitionable slot consumes: requests that differ in them must not
// share a matchlist, nor jobs an autocluster.
var partitionableRequestAttrs = []string{"requestcpus", "requestdisk", "requestmemory", "requestgpus"}

// carve gives job of request r a dynamic slot out of the first
// partitionable slot, in name order, whose leftover p's ad matches, and
// subtracts the request from that slot's leftover. It reports the CPUs
// the match took, or false when no partitionable slot is left for p.
//
// A slot only shrinks within a cycle, so a slot that cannot take p's
// request now never will: p's cursor passes it for good. This assumes,
// as HTCondor's consumption policies do, that a match does not become
// true as Cpus, Memory or Disk fall.
func (a *allocator) carve(r *Request, p *plan, job int) (int, bool) {
	pp := a.partPlans[p]
	if pp == nil {
		if a.partPlans == nil {
			a.partPlans = map[*plan]*partPlan{}
		}
		pp = &partPlan{need: requestQuantity(p.ad)}
		a.partPlans[p] = pp
	}
	need, m := pp.need, a.matchers[0]
	for pp.cursor < len(a.parts) {
		s := &a.parts[pp.cursor]
		if !s.left.covers(need) || !m.Match(p.ad, s.ad) {
			pp.cursor++
			continue
		}
		s.left = quantity{s.left.cpus - need.cpus, s.left.memory - need.memory, s.left.disk - need.disk, s.left.gpus - need.gpus}
		s.left.setIn(s.ad)
		a.matches = append(a.matches, Match{
			Job:     Job{ID: r.JobIDs[job], Agent: r.Agent, AgentAddr: r.AgentAddr, Ad: r.Ad},
			Request: r.ID,
			Machine: s.m,
		})
		return int(need.cpus), true
	}
	return 0, false
}

package startd

import (
	"fmt"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/gpu"
)

// slotKind is what a slot is in HTCondor's model of machine resources.
type slotKind int

const (
	// static: a fixed share of the machine, claimed whole.
	static slotKind = iota
	// partitionable: a share of the machine that is never claimed itself;
	// each match carves a dynamic slot of the job's size out of it.
	partitionable
	// dynamic: carved from a partitionable slot for one match; it exists
	// while it is matched or claimed and returns its resources after.
	dynamic
)

// slotType is SlotType as the ads read it.
func (k slotKind) slotType() string {
	return [...]string{"Static", "Partitionable", "Dynamic"}[k]
}

// slot is one share of the machine, advertised as its own ad. Its fields
// are guarded by the owning Startd's mutex.
type slot struct {
	// id is unique among the startd's slots for its life: static and
	// partitionable slots are numbered from 1, dynamic ones after them.
	id   int
	name string // "slot1@host", "slot1_2@host" for a dynamic slot

	kind  slotKind
	share share     // static and partitionable: its part of the machine
	size  resources // dynamic: what it was carved with
	// parent is a dynamic slot's partitionable slot; children counts the
	// dynamic slots a partitionable one has carved (for their names).
	parent   *slot
	children int
	// gpus are the devices the slot holds: a static or partitionable
	// slot's share of the machine's, a dynamic slot's carved from its
	// partitionable slot's; gpuAttrs are a dynamic slot's GPU attributes,
	// made when it is carved.
	gpus     []gpu.Device
	gpuAttrs []gpuAttr

	phase           phase
	enteredState    time.Time
	enteredActivity time.Time
	// renewed is when the agent holding the claim last showed it is
	// alive (claim, activation, keepalive); the claim lease runs from it.
	renewed time.Time
	// unsent is set while the slot's ad has changed since the advertiser
	// last sent it.
	unsent bool
}

func newSlot(id int, host string, now time.Time) *slot {
	return &slot{
		id:              id,
		name:            fmt.Sprintf("slot%d@%s", id, host),
		phase:           unclaimed{},
		enteredState:    now,
		enteredActivity: now,
		unsent:          true,
	}
}

// newDynamic carves a dynamic slot of size out of the partitionable slot
// p; the caller adds it to the startd's slots under id.
func newDynamic(p *slot, id int, size resources, now time.Time) *slot {
	p.children++
	short, host, _ := strings.Cut(p.name, "@")
	d := newSlot(id, host, now)
	d.name = fmt.Sprintf("%s_%d@%s", short, p.children, host)
	d.kind, d.size, d.parent = dynamic, size, p
	return d
}

// short is the slot name without the host ("slot1", "slot1_2").
func (sl *slot) short() string {
	short, _, _ := strings.Cut(sl.name, "@")
	return short
}

// slotID is the SlotID the ads show: a dynamic slot's is its
// partitionable slot's, as in HTCondor.
func (sl *slot) slotID() int {
	if sl.parent != nil {
		return sl.parent.id
	}
	return sl.id
}

// moveTo changes the slot's phase, or returns a *TransitionError if the
// state machine does not allow the move.
func (sl *slot) moveTo(next phase, now time.Time) error {
	from, to := sl.phase.status(), next.status()
	if !next.follows(sl.phase) {
		return &TransitionError{Slot: sl.name, From: from, To: to}
	}
	sl.phase = next
	if from.State != to.State {
		sl.enteredState = now
	}
	if from != to {
		sl.enteredActivity = now
	}
	return nil
}

// view is a consistent copy of what the machine ad shows about a slot.
type view struct {
	id     int // the slot's own id, which keys the job loads
	slotID int
	name   string
	kind   slotKind
	share  share
	// size is a dynamic slot's; children are the sizes of a
	// partitionable slot's dynamic slots, oldest first, and used their sum.
	size     resources
	used     resources
	children []resources
	// gpus are the devices the slot holds; a partitionable slot's
	// dynamic slots hold heldGPUs of them. gpuAttrs: see slot.
	gpus            []gpu.Device
	heldGPUs        []gpu.Device
	gpuAttrs        []gpuAttr
	status          Status
	enteredState    time.Time
	enteredActivity time.Time
	claim           *claim // nil unless claimed; claims are immutable
	// job is the ad of the running job or, with no job running, of the
	// job the claim was made for; nil without a claim. It is only read.
	job *classad.ClassAd
}

// view returns the view of sl; for a partitionable slot, with what its
// dynamic slots (among slots) hold.
func (sl *slot) view(slots []*slot) view {
	var used resources
	var children []resources
	var held []gpu.Device
	if sl.kind == partitionable {
		for _, d := range slots {
			if d.parent == sl {
				used = used.plus(d.size)
				children = append(children, d.size)
				held = append(held, d.gpus...)
			}
		}
	}
	c := claimOf(sl.phase)
	var job *classad.ClassAd
	if r := runOf(sl.phase); r != nil {
		job = r.job
	} else if c != nil {
		job = c.job
	}
	return view{
		id:              sl.id,
		slotID:          sl.slotID(),
		name:            sl.name,
		kind:            sl.kind,
		share:           sl.share,
		size:            sl.size,
		status:          sl.phase.status(),
		enteredState:    sl.enteredState,
		enteredActivity: sl.enteredActivity,
		claim:           c,
		job:             job,
		used:            used,
		children:        children,
		gpus:            sl.gpus,
		heldGPUs:        held,
		gpuAttrs:        sl.gpuAttrs,
	}
}

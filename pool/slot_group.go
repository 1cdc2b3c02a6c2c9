package pool

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
)

// SlotGroup is one AcquireGroup's hold on the slot of one index on every
// device of a MultiSlots, from AcquireGroup to Release: a Slot on each
// device (At, On), each as Acquire hands out, laid out for one profile. It
// is a small value, copied freely; once released, every copy refuses to be
// used: its Release returns ErrSlotReleased and its members' methods do.
// The zero SlotGroup is no group.
type SlotGroup struct {
	g    *indexGroup
	gen  uint64
	prof int
}

// indexGroup is what the slots of index k on every device share as a
// group: the holder's Slots, and the group waiter bound to the index.
type indexGroup struct {
	m     *MultiSlots
	index int
	// gen is advanced by each Release of a SlotGroup of the index: a
	// SlotGroup of another generation was released.
	gen atomic.Uint64
	// gens are the generations of the holder's Slots, by position: written
	// by AcquireGroup before the SlotGroup exists, read by its copies and
	// by those of groups released before, which refuse them.
	gens  []atomic.Uint64
	bound *groupWaiter // the AcquireGroup waiting for this index; guarded by m.bind
}

// releasedGen is the generation no slot reaches: a Slot with it is
// released.
const releasedGen = ^uint64(0)

// Index is the slots' index, the same on every device: state kept per
// group (a CUDA graph captured on every member, a communicator set) is
// indexed by it. -1 for the zero SlotGroup.
func (sg SlotGroup) Index() int {
	if sg.g == nil {
		return -1
	}
	return sg.g.index
}

// Len is the number of slots, one a device of the MultiSlots.
func (sg SlotGroup) Len() int {
	if sg.g == nil {
		return 0
	}
	return len(sg.g.gens)
}

// Profile is the name of the profile the slots were acquired with.
func (sg SlotGroup) Profile() string {
	if sg.g == nil {
		return ""
	}
	return sg.g.m.per[0].profiles[sg.prof].name
}

// At is the slot on the i-th device of MultiSlots.Devices, the zero Slot
// for an i out of range. It allocates nothing.
func (sg SlotGroup) At(i int) Slot {
	if i < 0 || i >= sg.Len() {
		return Slot{}
	}
	s := sg.g.m.per[i]
	gen := sg.g.gens[i].Load()
	// Read after gens: a generation stored by a later holder is seen with
	// the index's gen it advanced.
	if sg.g.gen.Load() != sg.gen {
		gen = releasedGen
	}
	return Slot{s: &s.slots[sg.g.index], prof: s.profiles[sg.prof], gen: gen}
}

// On is the slot on device, the zero Slot for a device the MultiSlots
// has no slots on. It allocates nothing.
func (sg SlotGroup) On(device int) Slot {
	if sg.g == nil {
		return Slot{}
	}
	return sg.At(slices.Index(sg.g.m.devices, device))
}

// Slots are the slots in the order of MultiSlots.Devices, in a new slice.
func (sg SlotGroup) Slots() []Slot {
	out := make([]Slot, sg.Len())
	for i := range out {
		out[i] = sg.At(i)
	}
	return out
}

// Release gives every slot of the group back (Slots.Release), without
// waiting, and returns their errors joined. Release of a group already
// released is ErrSlotReleased, of the zero SlotGroup ErrForeignSlot. It
// allocates nothing when every slot goes back.
func (sg SlotGroup) Release() error {
	if sg.g == nil {
		return fmt.Errorf("%w: release of the zero SlotGroup", ErrForeignSlot)
	}
	if !sg.g.gen.CompareAndSwap(sg.gen, sg.gen+1) {
		return fmt.Errorf("%w: slot group %d", ErrSlotReleased, sg.g.index)
	}
	var err error
	for i, s := range sg.g.m.per {
		sl := Slot{s: &s.slots[sg.g.index], prof: s.profiles[sg.prof], gen: sg.g.gens[i].Load()}
		if e := s.Release(sl); e != nil {
			err = errors.Join(err, fmt.Errorf("pool: release slot group %d on device %d: %w", sg.g.index, s.dev, e))
		}
	}
	return err
}

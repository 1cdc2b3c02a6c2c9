package pool

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
)

// MultiSlots serves requests from slots on several devices: one Slots on
// each, the same layout on all, the shared buffers once on each device (load
// the weights through each device's Slots.Shared). Acquire hands out a free
// slot of any device, and when none is free waits for whichever frees first,
// behind the calls already waiting (FIFO across devices). AcquireGroup
// hands out slot k of every device at once, for a request that runs on
// all of them (tensor parallel). A slot's attachments are opened on its
// own device (a cuBLAS handle per slot, on the slot's stream; a
// communicator per slot index, whose ranks are one group's slots). It is
// safe for concurrent use. Create it with NewMultiSlots.
type MultiSlots struct {
	per     []*Slots // by position in the devices given
	devices []int
	next    atomic.Uint32 // where the next Acquire starts looking

	groups []indexGroup // by slot index

	// mu guards the fields below, and orders the waiters' places in every
	// device's queue: it is taken before a Slots' lock, never after. An
	// AcquireGroup holds every Slots' lock at once, taken in the order of
	// per; every other holder of a Slots' lock holds one.
	mu            sync.Mutex
	closed        bool
	waiting       int
	spare         []*anyWaiter // finished any-device waiters, reused
	waitingGroups int          // AcquireGroup calls waiting
	spareGroups   []*groupWaiter
	count         []int // AcquireGroup's tally of ready slots by index, all 0 between calls

	// bind guards each index's bound group waiter (indexGroup.bound) and
	// each group waiter's index. It is taken under a Slots' lock, and no
	// lock is taken under it.
	bind sync.Mutex
}

// anyWaiter is one MultiSlots Acquire waiting for a slot: a waiter in
// every device's queue, of which the first handed something claims it.
type anyWaiter struct {
	// won is the part that was handed the outcome, or cancelled once the
	// Acquire gave up; nil while it waits.
	won  atomic.Pointer[waiter]
	ch   chan struct{} // receives once, from the part that claimed it
	subs []*waiter     // its part in each device's queue, by position
	at   []*Slots      // the Slots of each part
}

// cancelled marks an any-device waiter whose Acquire gave up.
var cancelled = new(waiter)

// NewMultiSlots makes n slots of layout on each of devices, as NewSlots
// does on one (opts are its options, WithDevice replaced by each device):
// memory, streams and attachments per device. Devices must be distinct and
// at least one. If one device's Slots cannot be made, those already made
// are closed and the error says which device failed.
func NewMultiSlots(rt cudart.Runtime, devices []int, n int, layout SlotLayout, opts ...Option) (*MultiSlots, error) {
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: NewMultiSlots with no device", ErrInvalidOption)
	}
	for i, d := range devices {
		if slices.Contains(devices[:i], d) {
			return nil, fmt.Errorf("%w: NewMultiSlots: device %d given twice", ErrInvalidOption, d)
		}
	}
	m := &MultiSlots{devices: slices.Clone(devices)}
	for _, d := range devices {
		s, err := NewSlots(rt, n, layout, append(slices.Clone(opts), WithDevice(d))...)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("pool: NewMultiSlots: the slots of device %d: %w", d, err), m.closeAll())
		}
		m.per = append(m.per, s)
	}
	// Once NewSlots has accepted n.
	m.groups, m.count = make([]indexGroup, n), make([]int, n)
	for k := range m.groups {
		m.groups[k] = indexGroup{m: m, index: k, gens: make([]atomic.Uint64, len(devices))}
	}
	return m, nil
}

// Devices are the devices' ordinals, in the order NewMultiSlots was given
// them.
func (m *MultiSlots) Devices() []int { return slices.Clone(m.devices) }

// On is the Slots of device, nil for a device it has none on: the shared
// buffers of that device are its Shared.
func (m *MultiSlots) On(device int) *Slots {
	if i := slices.Index(m.devices, device); i >= 0 {
		return m.per[i]
	}
	return nil
}

// Release gives the slot back to its device's Slots (Slots.Release). A Slot
// of Slots that are not these is ErrForeignSlot.
func (m *MultiSlots) Release(sl Slot) error {
	if sl.s == nil || !slices.Contains(m.per, sl.s.owner) {
		return fmt.Errorf("%w: release of %s", ErrForeignSlot, sl.label())
	}
	return sl.s.owner.Release(sl)
}

// Close refuses later Acquire calls, wakes those waiting with ErrClosed,
// and closes every device's Slots, returning their errors joined. Like
// Slots.Close it is idempotent: a later Close tries again what failed.
func (m *MultiSlots) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return m.closeAll()
}

func (m *MultiSlots) closeAll() error {
	var errs []error
	for i, s := range m.per {
		errs = append(errs, wrapf(s.Close(), "pool: close the slots of device %d", m.devices[i]))
	}
	return errors.Join(errs...)
}

// MultiSlotsStats are the slots of every device.
type MultiSlotsStats struct {
	Slots, InUse, Ready, Draining int          // summed over the devices
	Waiting                       int          // MultiSlots.Acquire calls waiting for a slot
	WaitingGroups                 int          // AcquireGroup calls waiting for their slots
	PerDevice                     []SlotsStats // in the order of Devices
	Closed                        bool
}

// Stats is a snapshot of every device's slots. A device's own Waiting
// counts the MultiSlots' waiting calls too: an Acquire waits on every
// device, an AcquireGroup on every device whose slot it has not taken.
func (m *MultiSlots) Stats() MultiSlotsStats {
	var st MultiSlotsStats
	m.mu.Lock()
	st.Waiting, st.WaitingGroups, st.Closed = m.waiting, m.waitingGroups, m.closed
	m.mu.Unlock()
	for _, s := range m.per {
		ps := s.Stats()
		st.Slots += ps.Slots
		st.InUse += ps.InUse
		st.Ready += ps.Ready
		st.Draining += ps.Draining
		st.PerDevice = append(st.PerDevice, ps)
	}
	return st
}

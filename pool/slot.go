package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
)

// Slot is one request's hold on a slot, from Acquire to Release: the slot's
// buffers laid out for the profile it was acquired with, the shared
// buffers, and the slot's stream. It is a small value, copied freely; once
// released, every copy refuses to be used (ErrSlotReleased), as the slot may
// serve another request. After a reset of the device (cudaDeviceReset
// through cudart) Stream, Lookup, Ptr and Bytes return ErrDeviceReset: the
// memory and the stream are gone. The zero Slot is no slot.
type Slot struct {
	s    *slot
	prof *planned
	gen  uint64
}

// check says why the slot cannot be used now, if it cannot.
func (sl Slot) check() error {
	switch {
	case sl.s == nil:
		return fmt.Errorf("%w: the zero Slot; use the one Acquire returned", ErrForeignSlot)
	case sl.s.owner.closedFlag.Load():
		return fmt.Errorf("%w: slot %d", ErrClosed, sl.s.index)
	case sl.s.gen.Load() != sl.gen:
		return fmt.Errorf("%w: slot %d", ErrSlotReleased, sl.s.index)
	case sl.s.owner.p.reset.Reset():
		return fmt.Errorf("%w: slot %d: device %d was reset since NewSlots, which freed the slot's memory and destroyed its stream", ErrDeviceReset, sl.s.index, sl.s.owner.dev)
	}
	return nil
}

// Index is the slot's number, 0 to Len()-1, the same on every Acquire that
// hands it out: state kept per slot (a CUDA graph captured on it) is
// indexed by it. -1 for the zero Slot.
func (sl Slot) Index() int {
	if sl.s == nil {
		return -1
	}
	return sl.s.index
}

// Device is the ordinal of the device the slot is on: the one its
// MultiSlots Acquire found it on. -1 for the zero Slot.
func (sl Slot) Device() int {
	if sl.s == nil {
		return -1
	}
	return sl.s.owner.dev
}

// Profile is the name of the profile the slot was acquired with.
func (sl Slot) Profile() string {
	if sl.prof == nil {
		return ""
	}
	return sl.prof.name
}

// Stream is the slot's own stream: queue the request's work on it, so that
// Release knows when it has finished. It is the same stream on every
// Acquire of the slot.
func (sl Slot) Stream() (cudart.Stream, error) {
	if err := sl.check(); err != nil {
		return 0, err
	}
	return sl.s.stream, nil
}

// Lookup finds the buffer called name in the slot's profile, then among the
// shared buffers.
func (sl Slot) Lookup(name string) (Ref, error) {
	if err := sl.check(); err != nil {
		return Ref{}, err
	}
	if i, ok := sl.prof.names[name]; ok {
		return Ref{p: sl.prof.decl, i: i}, nil
	}
	if i, ok := sl.s.owner.sharedNames[name]; ok {
		return Ref{p: sl.s.owner.shared, i: i}, nil
	}
	return Ref{}, fmt.Errorf("%w: no buffer %q in profile %q nor among the shared buffers", ErrNotInProfile, name, sl.prof.name)
}

// Ptr is the device address of r in this slot: a device buffer, a shared
// one, or a host buffer of a mapped host arena (WithHostFlags(pinned.Mapped)).
// It never changes for the life of the Slots.
func (sl Slot) Ptr(r Ref) (cudart.DevicePtr, error) {
	arena, off, size, err := sl.find(r)
	if err != nil {
		return 0, err
	}
	if r.p == sl.s.owner.shared {
		if at := sl.s.owner.sharedAt[r.i]; at.ptr != 0 {
			return at.ptr, nil
		}
	} else if base := sl.s.regionPtr(arena); base != 0 {
		return base.Add(off), nil
	}
	return 0, fmt.Errorf("%w: %s (%d B) has no device address; its arena is not mapped", ErrWrongArena, r.label(), size)
}

// Bytes is the view of host buffer r in this slot, len == r.Size(): where a
// request stages its input and reads its output. It must not be used after
// Release.
func (sl Slot) Bytes(r Ref) ([]byte, error) {
	arena, off, size, err := sl.find(r)
	if err != nil {
		return nil, err
	}
	if arena != Host {
		return nil, fmt.Errorf("%w: %s is a device buffer; use Ptr", ErrWrongArena, r.label())
	}
	if r.p == sl.s.owner.shared {
		return sl.s.owner.sharedAt[r.i].bytes, nil
	}
	return sl.s.host[off : off+size : off+size], nil
}

// find checks the slot and resolves r in its profile or the shared buffers.
func (sl Slot) find(r Ref) (arena Arena, off, size uint64, err error) {
	if err := sl.check(); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case r.p == nil:
	case r.p == sl.prof.decl && int(r.i) < len(sl.prof.bufs):
		b := &sl.prof.bufs[r.i]
		return b.arena, b.offset, b.size, nil
	case r.p == sl.s.owner.shared && int(r.i) < len(sl.s.owner.sharedAt):
		return sl.s.owner.sharedAt[r.i].arena, 0, r.Size(), nil
	}
	return 0, 0, 0, fmt.Errorf("%w: %s, in a slot of profile %q", ErrNotInProfile, r.label(), sl.prof.name)
}

// regionPtr is the device address of byte 0 of the slot's region in arena,
// or 0 when that arena has none.
func (d *slot) regionPtr(arena Arena) cudart.DevicePtr {
	if arena == Host {
		return d.hostDev
	}
	return d.dev
}

// label is how errors name the slot.
func (sl Slot) label() string {
	if sl.s == nil {
		return "the zero Slot"
	}
	return fmt.Sprintf("slot %d", sl.s.index)
}

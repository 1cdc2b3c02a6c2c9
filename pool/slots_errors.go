package pool

import "errors"

// ErrUnknownProfile is returned by Acquire for a profile name that was not
// given to NewSlots.
var ErrUnknownProfile = errors.New("pool: unknown profile")

// ErrNotInProfile is returned by Lookup, Ptr and Bytes for a buffer that is
// not in the slot's profile nor among the shared buffers: a name never
// declared, or a Ref of another profile.
var ErrNotInProfile = errors.New("pool: buffer not in this profile")

// ErrSlotReleased is returned by Release of a Slot already released, and by
// every method of a Slot after its Release: the slot may now serve another
// request.
var ErrSlotReleased = errors.New("pool: slot already released")

// ErrForeignSlot is returned by Release of a Slot that these Slots did not
// hand out: one of other Slots, or the zero Slot.
var ErrForeignSlot = errors.New("pool: slot not acquired from these slots")

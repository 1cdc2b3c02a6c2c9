package nccl

import (
	"fmt"
	"io"

	"github.com/cudapool/cudapool/cudart"
)

// SlotComms gives every slot of a pool's Slots or MultiSlots a communicator
// of its own, made before the slots: put it in pool.SlotLayout.Attach. Slot
// i on device d gets the communicator of comms[i] on device d (Comm.Device),
// so comms[i] is one InitAll over the devices of a MultiSlots, or the one
// communicator of this process's device from InitRank. A request gets it
// lent for its lease (a Lent, from pool.Attached[nccl.Lent]), which queues
// every operation on the slot's stream and refuses them once the slot is
// released. Make it with Library.ForSlots.
//
// The slots make no communicator: NewSlots attaches slot by slot, device
// by device, and an init there would wait for ranks not made yet. Nor do
// they destroy them: their Close, device by device, leaves the
// communicators to the caller, who made them. Destroy them after the slots'
// Close, which waits for the work queued on the slots' streams.
//
// It is not a pool.Charged attachment: the communicators, made before the
// slots, have taken their init's memory when NewSlots asks the device what
// is free. A communicator takes more at its first collective (see Memory
// in the package's doc): run one before NewSlots, or leave it room.
type SlotComms struct {
	l     *Library
	comms [][]*Comm
}

// ForSlots gives slot i on device d the communicator of comms[i] on device
// d (see SlotComms). comms is not copied: leave it as it is until the slots
// are made. NewSlots checks it, before it takes anything: every
// communicator of l, open, once in all of comms, and at most one of each
// slot's on a device.
func (l *Library) ForSlots(comms [][]*Comm) SlotComms {
	return SlotComms{l: l, comms: comms}
}

// Scratch is 0: NCCL's memory is its own. It checks the communicators (see
// ForSlots): an error wraps ErrInvalidOption, or ErrClosed for a
// communicator destroyed or aborted, or the zero SlotComms, which has no
// library.
func (a SlotComms) Scratch() (uint64, error) {
	if a.l == nil {
		return 0, fmt.Errorf("%w: SlotComms of no library: make them with Library.ForSlots", ErrClosed)
	}
	if len(a.comms) == 0 {
		return 0, fmt.Errorf("%w: ForSlots with no slot's communicators", ErrInvalidOption)
	}
	seen := make(map[*Comm]int)
	for i, cs := range a.comms {
		devs := make(map[int]bool, len(cs))
		for _, c := range cs {
			switch {
			case c == nil:
				return 0, fmt.Errorf("%w: ForSlots: slot %d has a nil communicator", ErrInvalidOption, i)
			case c.l != a.l:
				return 0, fmt.Errorf("%w: ForSlots: slot %d's %s is of another library", ErrInvalidOption, i, c)
			case devs[c.device]:
				return 0, fmt.Errorf("%w: ForSlots: slot %d has two communicators on device %d", ErrInvalidOption, i, c.device)
			}
			if j, dup := seen[c]; dup {
				return 0, fmt.Errorf("%w: ForSlots: %s is given to slots %d and %d: their requests would interleave its operations", ErrInvalidOption, c, j, i)
			}
			if c.closed() {
				return 0, fmt.Errorf("%w: ForSlots: slot %d's %s", ErrClosed, i, c)
			}
			seen[c], devs[c.device] = i, true
		}
	}
	return 0, nil
}

// Attach gives slot index on device its communicator, bound to stream s,
// the slot's: a resource that lends a Lent to each of the slot's requests.
// A slot ForSlots has no communicator for on device is an error wrapping
// ErrInvalidOption. Nothing is made: it calls nothing.
func (a SlotComms) Attach(device, index int, s cudart.Stream, _ cudart.DevicePtr, _ uint64) (io.Closer, error) {
	if index < 0 || index >= len(a.comms) {
		return nil, fmt.Errorf("%w: slot %d: ForSlots has communicators for %d slots", ErrInvalidOption, index, len(a.comms))
	}
	for _, c := range a.comms[index] {
		if c.device == device {
			return &slotComm{c: c, stream: s}, nil
		}
	}
	return nil, fmt.Errorf("%w: slot %d on device %d: none of its %d communicators is on device %d", ErrInvalidOption, index, device, len(a.comms[index]), device)
}

// slotComm is a slot's communicator and stream, which lends them to each
// request (Lend).
type slotComm struct {
	c      *Comm
	stream cudart.Stream
}

// Lend lends the slot's communicator for lease tok of g, on the slot's
// stream. It allocates nothing and calls nothing.
func (sc *slotComm) Lend(g Guard, tok uint64) Lent {
	return Lent{c: sc.c, stream: sc.stream, g: g, tok: tok}
}

// Close leaves the communicator to its maker (see SlotComms): the slots'
// Guard refuses its Lents after their Close.
func (*slotComm) Close() error { return nil }

// closed reports whether c was destroyed or aborted.
func (c *Comm) closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw == 0
}

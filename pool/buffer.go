package pool

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
)

// Buffer is a handle to one request. Its address is usable from the Satisfy
// that places it until the next ReleaseAll or Close; before and after, Ptr and
// Bytes return an error rather than an address that may belong to another
// buffer.
type Buffer struct {
	p      *Pool
	size   uint64
	offset uint64
	name   string
	gen    uint64 // the pool generation the buffer belongs to

	// Steps fit in int32 (MaxStep) and the flags in bytes, which keeps a
	// handle at 64 bytes: placing thousands of buffers is bound by memory
	// traffic.
	first, last int32
	arena       Arena
	hasLife     bool
	sub         bool        // SubAllocated: its owner annotates its parts
	placed      atomic.Bool // set under p.mu; Placed reads it without
}

// Offset is the buffer's offset in its arena (a multiple of 256), or 0 before
// placement and for a nil handle.
func (b *Buffer) Offset() uint64 {
	if b.invalid() != nil {
		return 0
	}
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	return b.offset
}

// Size is the requested size in bytes; 0 for a nil handle.
func (b *Buffer) Size() uint64 {
	if b == nil {
		return 0
	}
	return b.size
}

// Name is the name given with the Name option, or "".
func (b *Buffer) Name() string {
	if b == nil {
		return ""
	}
	return b.name
}

// Device is the ordinal of the device whose memory the buffer is in: the
// pool's (WithDevice); 0 for a nil handle.
func (b *Buffer) Device() int {
	if b == nil || b.p == nil {
		return 0
	}
	return b.p.dev
}

// Arena says which arena the buffer is in.
func (b *Buffer) Arena() Arena {
	if b == nil {
		return Device
	}
	return b.arena
}

// Ptr returns the device address of a device or managed buffer, or of a host
// buffer in a host arena mapped into the device address space.
func (b *Buffer) Ptr() (cudart.DevicePtr, error) {
	if err := b.lock(); err != nil {
		return 0, err
	}
	defer b.p.mu.Unlock()
	base := b.p.arenas[b.arena].mem.device()
	if base == 0 {
		return 0, fmt.Errorf("%w: %s is in the %s arena, which has no device address (pin it with WithHostFlags(pinned.Mapped))", ErrWrongArena, b.label(), b.arena)
	}
	return base.Add(b.offset), nil
}

// Placed returns nil while the buffer is placed, and otherwise the error
// Ptr and Bytes would return (wrapping ErrNotPlaced, ErrReleased, ErrClosed
// or ErrDeviceReset). Unlike them it takes no lock while the buffer is
// placed: it reads the pool's generation, which ReleaseAll and Close change
// under the pool's lock, and the device's reset count, both atomically, so
// a holder of the buffer may ask it on every call of a hot path. While a
// ReleaseAll or Close runs, Placed waits for it and answers after.
//
// A nil from Placed says the buffer was placed when Placed read the pool; a
// ReleaseAll or Close from another goroutine may take it back right after.
// To write into the buffer (or queue work that does) with no release in
// between, hold it with Use.
func (b *Buffer) Placed() error {
	if b != nil && b.p != nil && b.placedNow() {
		return nil
	}
	return b.placedErr()
}

// placedNow is the lock-free reading Placed and Use trust: the pool's
// generation the buffer was placed in, its placed flag, and no reset of
// the device since.
func (b *Buffer) placedNow() bool {
	return b.p.live.Load() == b.gen && b.placed.Load() && !b.p.reset.Reset()
}

// Use is Placed, and when it returns nil the pool's ReleaseAll and Close
// wait, before they wait for the pool's streams, until Done: the work the
// caller queues between Use and Done on a stream ReleaseAll and Close wait
// for (see ReleaseAll) is done before the buffer is taken back. Every nil
// from Use takes one Done. Between them the caller must call nothing of
// the pool, whose ReleaseAll or Close may be waiting with the pool's lock
// held, and must not block: keep to a few runtime calls. A reset of the
// device is CUDA's, and is not held off.
func (b *Buffer) Use() error {
	if b == nil || b.p == nil {
		return b.placedErr()
	}
	p := b.p
	for {
		p.users.Add(1)
		if b.placedNow() {
			return nil
		}
		p.users.Add(-1)
		// Under the lock, after any release running now: a ReleaseAll that
		// failed leaves the buffer placed, and Use tries again.
		if err := b.placedErr(); err != nil {
			return err
		}
	}
}

// Done ends the hold a nil from Use began; on a nil handle it does
// nothing.
func (b *Buffer) Done() {
	if b != nil && b.p != nil {
		b.p.users.Add(-1)
	}
}

// placedErr is Placed's answer where the atomics did not say placed: under
// the pool's lock, which orders it after a Satisfy placing the buffer.
func (b *Buffer) placedErr() error {
	if err := b.lock(); err != nil {
		return err
	}
	b.p.mu.Unlock()
	return nil
}

// Bytes returns a view of a host buffer, len(Bytes()) == Size(). The view must
// not be used after ReleaseAll or Close.
func (b *Buffer) Bytes() ([]byte, error) {
	if err := b.lock(); err != nil {
		return nil, err
	}
	defer b.p.mu.Unlock()
	h := b.p.arenas[b.arena].mem.host()
	if h == nil {
		return nil, fmt.Errorf("%w: %s is in the %s arena; use Ptr", ErrWrongArena, b.label(), b.arena)
	}
	return h[b.offset : b.offset+b.size : b.offset+b.size], nil
}

// invalid refuses a nil handle, or one not made by a pool.
func (b *Buffer) invalid() error {
	if b == nil || b.p == nil {
		return fmt.Errorf("%w: nil *Buffer; use the handle WantDevice, WantHost or WantManaged returned", ErrInvalidRequest)
	}
	return nil
}

// usable says why the handle cannot be used now, if it cannot. The caller
// holds p.mu.
func (b *Buffer) usable() error {
	if err := b.p.alive(); err != nil {
		return fmt.Errorf("%w: %s", err, b.label())
	}
	switch {
	case b.gen != b.p.gen:
		return fmt.Errorf("%w: %s", ErrReleased, b.label())
	case !b.placed.Load():
		return fmt.Errorf("%w: %s", ErrNotPlaced, b.label())
	}
	return nil
}

// lock takes the pool's lock when the handle can be used now, else says why
// not and holds nothing; the caller unlocks.
func (b *Buffer) lock() error {
	if err := b.invalid(); err != nil {
		return err
	}
	b.p.mu.Lock()
	err := b.usable() // runs no caller code, so cannot leave the lock held by a panic
	if err != nil {
		b.p.mu.Unlock()
	}
	return err
}

func (b *Buffer) label() string {
	if b.name != "" {
		return fmt.Sprintf("%s buffer %q", b.arena, b.name)
	}
	return fmt.Sprintf("unnamed %s buffer of %d bytes", b.arena, b.size)
}

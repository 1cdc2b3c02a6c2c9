package vmem

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/devreset"
)

// Arena is a range of device address space of fixed base and maximum size,
// backed by physical memory from its start up to what Ensure asked for.
// Growing maps more memory after what is mapped, so an address handed out
// stays valid until Trim or Close: this is the device arena a pool can grow
// without moving its buffers.
type Arena struct {
	base     cudart.DevicePtr // fixed at NewArena
	max      uint64           // as asked of NewArena
	reserved uint64           // max rounded up to the granularity
	reset    devreset.Watch   // sees a reset of the device, which may have lost it

	locked
}

// NewArena reserves maxBytes of address space on device (rounded up to the
// allocation granularity) and maps nothing yet: the reservation costs no
// device memory, so maxBytes may exceed what the device has.
func NewArena(vm cudart.VirtualMemory, device int, maxBytes uint64, opts ...Option) (*Arena, error) {
	if maxBytes == 0 {
		return nil, fmt.Errorf("%w: arena of 0 B", ErrInvalidSize)
	}
	p, err := newPhys(vm, device, opts)
	if err != nil {
		return nil, err
	}
	reserved, ok := roundUp(maxBytes, p.gran)
	if !ok {
		return nil, fmt.Errorf("%w: arena of %d B overflows once rounded up to the granularity %s", ErrInvalidSize, maxBytes, bytesize.Format(p.gran))
	}
	reset := devreset.Start(vm, device)
	base, err := vm.MemAddressReserve(reserved, p.gran, 0)
	if err != nil {
		return nil, fmt.Errorf("vmem: reserve %s of address space on device %d: %w", bytesize.Format(reserved), device, err)
	}
	return &Arena{base: base, max: maxBytes, reserved: reserved, reset: reset, locked: locked{p: p}}, nil
}

// Base is the arena's first address. It never changes.
func (a *Arena) Base() cudart.DevicePtr {
	if a == nil {
		return 0
	}
	return a.base
}

// Max is the largest size Ensure accepts: maxBytes as given to NewArena.
func (a *Arena) Max() uint64 {
	if a == nil {
		return 0
	}
	return a.max
}

// Mapped is the number of bytes from Base backed by physical memory and
// accessible to the owner and its peers.
func (a *Arena) Mapped() uint64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.p.mapped()
}

// Ensure makes [Base, Base+n) mapped and accessible, mapping what is missing
// with one cuMemCreate rounded up to the chunk (but not past the
// reservation). It does nothing when n bytes are mapped already. n past Max
// is an *ExhaustedError, even where rounding to the granularity mapped that
// far. A failed growth leaves the arena as it was: what
// the growth had created or mapped is unmapped and released.
func (a *Arena) Ensure(n uint64) error {
	if err := a.open(); err != nil {
		return err
	}
	defer a.mu.Unlock()
	have := a.p.mapped()
	if n > a.max {
		return &ExhaustedError{Asked: n, Max: a.max, Mapped: have}
	}
	if n <= have {
		return nil
	}
	target, ok := roundUp(n, a.p.chunk)
	if !ok || target > a.reserved {
		target = a.reserved
	}
	var s segment
	err := a.p.later.attempt(func(u *undoLog) (err error) {
		s, err = a.p.mapNew(u, a.base, have, target-have)
		return err
	})
	if err != nil {
		return fmt.Errorf("vmem: grow arena at %s from %s to %s on device %d: %w",
			a.base, bytesize.Format(have), bytesize.Format(target), a.p.device, err)
	}
	a.p.segs = append(a.p.segs, s)
	return nil
}

// Trim unmaps and releases the physical memory past n bytes, giving it back
// to the device while keeping the address range. Memory is given back a
// whole growth at a time: a growth that holds any byte below n stays mapped,
// so Mapped may stay above n. The bytes trimmed are lost; a later Ensure maps
// fresh memory there.
func (a *Arena) Trim(n uint64) error {
	if err := a.open(); err != nil {
		return err
	}
	defer a.mu.Unlock()
	if err := a.p.trim(a.base, n); err != nil {
		return fmt.Errorf("vmem: trim arena at %s to %s: %w", a.base, bytesize.Format(n), err)
	}
	return nil
}

// open takes a's lock unless a is nil or closed; the caller unlocks.
func (a *Arena) open() error {
	if a == nil {
		return errNilArena
	}
	return a.lockOpen()
}

// Close unmaps and releases all the physical memory and frees the address
// range. What CUDA refuses is kept and reported, and a later Close retries
// it; once everything is freed, Close returns nil. Ensure and Trim fail with
// ErrClosed from the first Close on. A reset of the device
// (cudaDeviceReset) changes nothing: virtual memory is the process's, not
// the context's, so the reset neither unmapped nor released it, and Close
// still must. But after a reset through cudart that followed a fault CUDA
// documents as fatal to the process, the device is lost and every call
// fails with cudart.ErrDevicesUnavailable: then Close forgets the arena
// (its memory stays taken until the process ends) and returns that error
// once, and nil after.
func (a *Arena) Close() error {
	if a == nil {
		return errNilArena
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return nil
	}
	a.closed = true
	err := a.p.teardown(a.base)
	if err == nil && len(a.p.segs) == 0 && len(a.p.later) == 0 {
		err = a.p.vm.MemAddressFree(a.base, a.reserved)
		if err == nil {
			a.freed = true
			return nil
		}
	}
	if a.reset.Reset() && errors.Is(err, cudart.ErrDevicesUnavailable) {
		a.p.segs, a.p.later, a.freed = nil, nil, true
		return fmt.Errorf("vmem: close arena at %s: device %d is lost (reset after a fatal fault), so the arena is forgotten and its memory stays taken until the process ends: %w", a.base, a.p.device, err)
	}
	return fmt.Errorf("vmem: close arena at %s (call Close again to retry): %w", a.base, err)
}

package vmem

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart"
)

// segment is one cuMemCreate allocation, mapped whole at off bytes from the
// start of its owner's address range. Each growth makes one (or, for a
// Vector whose growth spans two reservations, one per reservation): fewer,
// larger allocations make fewer CUDA calls than one per granule.
type segment struct {
	h    cudart.PhysHandle
	off  uint64
	size uint64
}

func (s segment) end() uint64 { return s.off + s.size }

// phys is the physical memory behind an Arena or a Vector: its segments,
// contiguous from offset 0, and the cleanups still owed to CUDA.
type phys struct {
	vm     cudart.VirtualMemory
	device int
	settings
	segs  []segment
	later deferred
}

// locked is the part of an Arena or a Vector its mutex guards: the physical
// memory and whether Close was called. The owner's mutex guards its own
// fields too.
type locked struct {
	mu     sync.Mutex
	p      phys
	closed bool
	freed  bool // Close has given everything back
}

// lockOpen takes the lock unless Close was called; the caller unlocks.
func (l *locked) lockOpen() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	return nil
}

func newPhys(vm cudart.VirtualMemory, device int, opts []Option) (phys, error) {
	if vm == nil {
		return phys{}, fmt.Errorf("%w: nil runtime; pass cudart.Open's Library or a cudarttest fake", ErrInvalidOption)
	}
	o, err := configure(opts)
	if err != nil {
		return phys{}, err
	}
	var gran uint64
	if o.handles == 0 {
		gran, err = vm.MemGetAllocationGranularity(device, true)
	} else {
		gran, err = vm.MemGetExportableGranularity(device, o.handles, true)
	}
	if err != nil {
		return phys{}, fmt.Errorf("vmem: allocation granularity of device %d: %w", device, err)
	}
	if gran == 0 {
		return phys{}, fmt.Errorf("vmem: device %d reports an allocation granularity of 0", device)
	}
	s, err := newSettings(device, gran, o)
	if err != nil {
		return phys{}, err
	}
	return phys{vm: vm, device: device, settings: s}, nil
}

// mapped is the number of bytes mapped.
func (p *phys) mapped() uint64 {
	if len(p.segs) == 0 {
		return 0
	}
	return p.segs[len(p.segs)-1].end()
}

// mapNew creates size bytes of physical memory, maps them at off from base
// and grants access, all in one reservation, logging in u how to take each
// step back. The caller adds the segment once its whole growth succeeds.
func (p *phys) mapNew(u *undoLog, base cudart.DevicePtr, off, size uint64) (segment, error) {
	h, err := p.create(size)
	if err != nil {
		return segment{}, err
	}
	u.push(func() error { return p.vm.MemRelease(h) })
	at := base.Add(off)
	if err := p.vm.MemMap(at, size, 0, h); err != nil {
		return segment{}, err
	}
	u.push(func() error { return p.vm.MemUnmap(at, size) })
	if err := p.vm.MemSetAccess(at, size, p.access); err != nil {
		return segment{}, err
	}
	return segment{h: h, off: off, size: size}, nil
}

// create makes size bytes of physical memory, exportable as the handle
// types asked for.
func (p *phys) create(size uint64) (cudart.PhysHandle, error) {
	if p.handles == 0 {
		return p.vm.MemCreate(p.device, size)
	}
	return p.vm.MemCreateExportable(p.device, size, p.handles)
}

// trim unmaps and releases the segments that start at or after keep, last
// first. It stops at the first unmap that fails, keeping that segment, so
// that what is counted as mapped always is; a failed release is retried
// later.
func (p *phys) trim(base cudart.DevicePtr, keep uint64) error {
	for n := len(p.segs); n > 0 && p.segs[n-1].off >= keep; n-- {
		s := p.segs[n-1]
		if err := p.vm.MemUnmap(base.Add(s.off), s.size); err != nil {
			return err
		}
		p.segs = p.segs[:n-1]
		if err := p.vm.MemRelease(s.h); err != nil {
			p.later.later(func() error { return p.vm.MemRelease(s.h) })
		}
	}
	return nil
}

// teardown retries the deferred cleanups, then unmaps and releases every
// segment mapped from base. It tries every step, whatever fails before it,
// and returns every failure.
func (p *phys) teardown(base cudart.DevicePtr) error {
	errs := []error{p.later.retry()}
	for n := len(p.segs); n > 0; n-- {
		s := p.segs[n-1]
		if err := p.vm.MemUnmap(base.Add(s.off), s.size); err != nil {
			// Kept, with every segment below it, for the next Close.
			return errors.Join(append(errs, err)...)
		}
		p.segs = p.segs[:n-1]
		if err := p.vm.MemRelease(s.h); err != nil {
			errs = append(errs, err)
			p.later.later(func() error { return p.vm.MemRelease(s.h) })
		}
	}
	return errors.Join(errs...)
}

package vmem

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// Vector is a growable run of device memory, the pattern of NVIDIA's
// "Introducing Low-Level GPU Virtual Memory Management": Grow maps more
// physical memory after what is mapped, first in address space reserved
// right after the current range and, where CUDA puts that elsewhere, in a
// new range into which the memory already mapped is mapped again. Either way
// no byte is copied, and the contents survive.
type Vector struct {
	locked                    // its mutex guards the fields below too
	ptr      cudart.DevicePtr // start of the first range; 0 before any
	ranges   []addrRange      // reservations making up [ptr, ptr+reserved), in address order
	reserved uint64
}

// addrRange is one cuMemAddressReserve reservation.
type addrRange struct {
	p    cudart.DevicePtr
	size uint64
}

// NewVector returns an empty vector on device. It reserves and maps nothing
// until Reserve or Grow.
func NewVector(vm cudart.VirtualMemory, device int, opts ...Option) (*Vector, error) {
	p, err := newPhys(vm, device, opts)
	if err != nil {
		return nil, err
	}
	return &Vector{locked: locked{p: p}}, nil
}

// Ptr is the vector's first address, 0 before the first Reserve or Grow. It
// changes when a growth moves the vector to a new range.
func (v *Vector) Ptr() cudart.DevicePtr {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ptr
}

// Size is the number of bytes mapped from Ptr: the largest size Grow was
// asked for, rounded up to the chunk.
func (v *Vector) Size() uint64 {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.p.mapped()
}

// Reserved is the address space from Ptr the vector can grow into without
// reserving more.
func (v *Vector) Reserved() uint64 {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reserved
}

// Reserve makes room in the address space for n bytes (rounded up to the
// granularity) without mapping memory, so that growing up to n bytes later
// never moves the vector. It may move the vector now. A failed Reserve
// leaves the vector as it was.
func (v *Vector) Reserve(n uint64) error {
	if err := v.open(); err != nil {
		return err
	}
	defer v.mu.Unlock()
	if n <= v.reserved {
		return nil
	}
	target, ok := roundUp(n, v.p.gran)
	if !ok {
		return fmt.Errorf("%w: reserve of %d B overflows once rounded up to the granularity %s", ErrInvalidSize, n, bytesize.Format(v.p.gran))
	}
	var plan addressPlan
	err := v.p.later.attempt(func(u *undoLog) (err error) {
		plan, err = v.planReserve(u, target)
		return err
	})
	if err != nil {
		return fmt.Errorf("vmem: reserve %s for vector at %s on device %d: %w",
			bytesize.Format(target), v.ptr, v.p.device, err)
	}
	v.commit(plan, target)
	return nil
}

// Grow makes the vector at least n bytes long: Size becomes n rounded up to
// the chunk, and the bytes past the old size are mapped (their contents are
// unspecified). It does nothing when the vector is long enough already. The
// missing address space is reserved first, which may move the vector. A
// failed Grow leaves the vector as it was: same Ptr, same Size, nothing
// created, mapped or reserved left behind.
func (v *Vector) Grow(n uint64) error {
	if err := v.open(); err != nil {
		return err
	}
	defer v.mu.Unlock()
	have := v.p.mapped()
	if n <= have {
		return nil
	}
	target, ok := roundUp(n, v.p.chunk)
	if !ok {
		return fmt.Errorf("%w: growth to %d B overflows once rounded up to the chunk %s", ErrInvalidSize, n, bytesize.Format(v.p.chunk))
	}
	var plan addressPlan
	var segs []segment
	err := v.p.later.attempt(func(u *undoLog) (err error) {
		plan, segs, err = v.planGrow(u, have, target)
		return err
	})
	if err != nil {
		return fmt.Errorf("vmem: grow vector at %s from %s to %s on device %d: %w",
			v.ptr, bytesize.Format(have), bytesize.Format(target), v.p.device, err)
	}
	v.commit(plan, max(target, v.reserved))
	v.p.segs = append(v.p.segs, segs...)
	return nil
}

// planGrow reserves what address space is missing and maps [have, target),
// one segment per reservation it touches: CUDA maps within one reservation.
func (v *Vector) planGrow(u *undoLog, have, target uint64) (addressPlan, []segment, error) {
	plan := addressPlan{ptr: v.ptr, ranges: v.ranges}
	if target > v.reserved {
		var err error
		if plan, err = v.planReserve(u, target); err != nil {
			return addressPlan{}, nil, err
		}
	}
	var segs []segment
	var off uint64
	for _, r := range plan.ranges {
		lo, hi := max(have, off), min(target, off+r.size)
		off += r.size
		if lo >= hi {
			continue
		}
		s, err := v.p.mapNew(u, plan.ptr, lo, hi-lo)
		if err != nil {
			return addressPlan{}, nil, err
		}
		segs = append(segs, s)
	}
	return plan, segs, nil
}

// open takes v's lock unless v is nil or closed; the caller unlocks.
func (v *Vector) open() error {
	if v == nil {
		return errNilVector
	}
	return v.lockOpen()
}

// Close unmaps and releases all the physical memory and frees every address
// range. What CUDA refuses is kept and reported, and a later Close retries
// it; once everything is freed, Close returns nil. Reserve and Grow fail
// with ErrClosed from the first Close on.
func (v *Vector) Close() error {
	if v == nil {
		return errNilVector
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.freed {
		return nil
	}
	v.closed = true
	if err := v.p.teardown(v.ptr); err != nil || len(v.p.segs) > 0 || len(v.p.later) > 0 {
		return fmt.Errorf("vmem: close vector at %s (call Close again to retry): %w", v.ptr, err)
	}
	var errs []error
	kept := v.ranges[:0]
	for _, r := range v.ranges {
		if err := v.p.vm.MemAddressFree(r.p, r.size); err != nil {
			errs = append(errs, err)
			kept = append(kept, r)
		}
	}
	v.ranges = kept
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vmem: close vector at %s (call Close again to retry): %w", v.ptr, err)
	}
	v.reserved, v.freed = 0, true
	return nil
}

package pinned

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/devreset"
)

// Region is pinned host memory from Alloc. Its methods are safe for
// concurrent use, but the bytes are the caller's to synchronise.
type Region struct {
	rt     cudart.Runtime
	hr     cudart.HostRegisterer // set when the region was registered
	device int
	method Method // the method used, after any fallback
	flags  Flags
	dev    cudart.DevicePtr // the device address, when Mapped
	reset  devreset.Watch   // sees a reset of device, which unpins the memory

	mu      sync.Mutex // guards the fields below
	b       []byte     // what Bytes returns; nil once freed
	mapping []byte     // the mmap behind a registered region, until unmapped
	chunks  [][]byte   // the chunks of mapping still registered
	host    []byte     // the cudaHostAlloc or cudaMallocHost memory, until freed
	freed   bool
}

// Bytes is the pinned memory, exactly as long as Alloc's size. It is valid
// until Free and nil after: the memory is unmapped then, and touching the
// slice kept from before crashes the program.
func (r *Region) Bytes() []byte {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b
}

// DevicePtr is the device address of the memory, through which a kernel
// reads and writes the same bytes (zero-copy). Only a region allocated with
// Mapped has one: others get ErrNotMapped, and a freed region ErrFreed.
func (r *Region) DevicePtr() (cudart.DevicePtr, error) {
	if r == nil {
		return 0, errNilRegion
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed {
		return 0, ErrFreed
	}
	return mappedAt(r.flags, r.dev)
}

// Method is the method that pinned the memory: the one asked for, or
// MethodHostAlloc after a fallback.
func (r *Region) Method() Method {
	if r == nil {
		return MethodRegister
	}
	return r.method
}

// Flags are the flags the memory was pinned with.
func (r *Region) Flags() Flags {
	if r == nil {
		return 0
	}
	return r.flags
}

// Free unpins the memory and returns it to the system. It is idempotent.
// When CUDA refuses, the error says so and the region keeps what it could
// not release, so that calling Free again retries only that. After a reset
// of the device (cudaDeviceReset through cudart), which unpinned the memory
// and freed what cudaHostAlloc gave, Free calls no CUDA: it unmaps what the
// package mapped itself and forgets the region.
func (r *Region) Free() error {
	if r == nil {
		return errNilRegion
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.release()
}

// release is Free with r.mu held, or during Alloc before r is shared. A
// range leaves the registry as soon as it is unpinned, before its memory goes
// back to the system: memory the system hands out again must not be found
// still claimed.
func (r *Region) release() error {
	if r.freed {
		return nil
	}
	if r.reset.Reset() {
		return r.forget()
	}
	var errs []error
	if r.mapping != nil {
		if len(r.chunks) > 0 {
			left, err := unregisterChunks(r.hr, r.device, r.chunks)
			r.chunks = left
			if len(left) > 0 {
				return err
			}
			// Chunks that CUDA says were not registered are unpinned all
			// the same: report it, but finish freeing.
			errs = append(errs, err)
		}
		pinnedRanges.release(r.mapping)
		if err := unmapAnon(r.mapping); err != nil {
			return errors.Join(append(errs, err)...)
		}
		r.mapping = nil
	}
	if r.host != nil {
		pinnedRanges.release(r.b)
		if err := r.rt.FreeHost(r.host); err != nil {
			// Still pinned: claim it again, which cannot collide, since
			// nothing else can have been given this memory.
			return errors.Join(append(errs, fmt.Errorf("pinned: cudaFreeHost: %w", err), pinnedRanges.claim(r.b, r.what(), r.reset))...)
		}
		r.host = nil
	}
	r.b = nil
	r.freed = true
	return errors.Join(errs...)
}

// forget is release after a reset of the region's device: CUDA has unpinned
// the memory and freed cudaHostAlloc's, so only the package's own mapping is
// left to unmap.
func (r *Region) forget() error {
	if r.mapping != nil {
		pinnedRanges.forget(r.mapping, r.reset)
		r.chunks = nil
		if err := unmapAnon(r.mapping); err != nil {
			return err
		}
		r.mapping = nil
	}
	if r.host != nil {
		pinnedRanges.forget(r.b, r.reset)
		r.host = nil
	}
	r.b = nil
	r.freed = true
	return nil
}

// what describes the region for the registry's messages.
func (r *Region) what() string { return "pinned by Alloc with " + r.method.String() }

package pool

import (
	"fmt"
	"unsafe"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/vmem"
)

// arena is one reserved range and the buffers placed in it. Its fields are
// guarded by the owning Pool's mu.
type arena struct {
	kind     Arena
	capacity uint64
	devBase  cudart.DevicePtr // device address of byte 0; 0 when the device cannot address it
	host     unsafe.Pointer   // host address of byte 0; nil for device memory
	release  func() error     // frees the memory; nil once it has been freed
	growable *vmem.Arena      // the physical memory behind a growable arena; nil for a fixed one
	pinning  pinned.Method    // how a host arena was pinned

	placed  []*Buffer
	pending []*Buffer

	used      uint64 // end of the highest placed buffer
	peak      uint64 // highest used since New
	requested uint64 // sum of the placed buffers' sizes
	unshared  uint64 // sum of the placed buffers' aligned sizes: what no sharing would need
}

// layout is where Satisfy would put an arena's pending buffers.
type layout struct {
	offsets []uint64 // nil for the bump path: apply recomputes them in order
	end     uint64
	sizes   uint64 // sum of the pending buffers' sizes
	aligned uint64 // sum of their aligned sizes
}

// alignedSize is size rounded up to the pool's alignment; Want has already
// refused sizes for which that overflows.
func alignedSize(size uint64) uint64 {
	n, _ := align.Up(size, align.CUDA)
	return n
}

// plan computes where the pending buffers go without changing anything, so
// that Satisfy can refuse the whole batch when one arena does not fit.
// Requests without lifetimes are bumped, in order, above everything placed,
// as the C++ pool does; lifetimes go to the planner.
func (a *arena) plan() (layout, error) {
	if a.pendingHasLifetimes() {
		return a.planLifetimes()
	}
	// Aligned sizes are multiples of 256, so once the first offset is
	// aligned every later one is too: the batch is one sum.
	start, err := align.Up(a.used, align.CUDA)
	if err != nil {
		return layout{}, a.exhausted(^uint64(0))
	}
	l := layout{end: start}
	for _, b := range a.pending {
		sz := alignedSize(b.size)
		if l.end+sz < l.end {
			return layout{}, a.exhausted(^uint64(0))
		}
		l.end += sz
		l.sizes += b.size
		l.aligned += sz
	}
	if l.end > a.capacity {
		return layout{}, a.exhausted(l.end)
	}
	return l, nil
}

// apply places the pending buffers where l says and empties the queue.
func (a *arena) apply(l layout) {
	next, _ := align.Up(a.used, align.CUDA) // plan checked it
	for i, b := range a.pending {
		if l.offsets != nil {
			b.offset = l.offsets[i]
		} else {
			b.offset = next
			next += alignedSize(b.size)
		}
		b.placed = true
	}
	a.placed = append(a.placed, a.pending...)
	clear(a.pending)
	a.pending = a.pending[:0]
	a.used = max(a.used, l.end)
	a.peak = max(a.peak, a.used)
	a.requested += l.sizes
	a.unshared += l.aligned
}

// reset forgets every buffer, keeping the slices' capacity for the next plan.
func (a *arena) reset() {
	clear(a.placed)
	a.placed = a.placed[:0]
	clear(a.pending)
	a.pending = a.pending[:0]
	a.used, a.requested, a.unshared = 0, 0, 0
}

func (a *arena) pendingBytes() uint64 {
	var n uint64
	for _, b := range a.pending {
		n += alignedSize(b.size)
	}
	return n
}

func (a *arena) exhausted(need uint64) *ExhaustedError {
	e := &ExhaustedError{Arena: a.kind, Need: need, Have: a.capacity}
	var largest *Buffer
	for _, b := range a.pending {
		if largest == nil || b.size > largest.size {
			largest = b
		}
	}
	if largest != nil {
		e.LargestBytes, e.LargestName = largest.size, requestName(largest.name, largest.size)
	}
	return e
}

// requestName is how errors name a request: its Name, or its size.
func requestName(name string, size uint64) string {
	if name == "" {
		return fmt.Sprintf("unnamed %d-byte request", size)
	}
	return name
}

// mapped is the bytes of physical memory behind the arena.
func (a *arena) mapped() uint64 {
	if a.growable != nil {
		return a.growable.Mapped()
	}
	return a.capacity
}

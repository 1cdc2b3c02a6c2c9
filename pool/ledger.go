package pool

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/checked"
)

// ledger is one arena and the buffers placed in it, the same for every kind of
// arena. Its fields are guarded by the owning Pool's mu.
type ledger struct {
	kind     Arena
	mem      arena
	capacity uint64 // mem.capacity(), read on every request
	guard    uint64 // bytes of guard after each buffer's aligned end (WithGuards)

	heap     cudart.MemHeap                 // the arena's annotation heap; 0 without annotations
	heapSize uint64                         // the bytes heap covers
	regions  map[uint64]cudart.MemRegion    // the regions registered in heap, by offset
	owned    map[*Buffer][]cudart.MemRegion // the parts of SubAllocated buffers their owners annotate

	placed  []*Buffer
	pending []*Buffer

	used      uint64 // end of the highest placed buffer
	peak      uint64 // highest used since New
	requested uint64 // sum of the placed buffers' sizes
	unshared  uint64 // sum of the placed buffers' aligned sizes: what no sharing would need
}

func newLedger(kind Arena, mem arena, guard uint64) *ledger {
	return &ledger{kind: kind, mem: mem, capacity: mem.capacity(), guard: guard}
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

// span is the bytes a buffer of size takes in the arena: its size aligned,
// then its guard. It cannot wrap: Want refuses sizes above the arena's
// capacity, which is memory CUDA gave, and WithGuards caps the guard at
// 1 TiB.
func (l *ledger) span(size uint64) uint64 { return alignedSize(size) + l.guard }

// plan computes where the pending buffers go without changing anything, so
// that Satisfy can refuse the whole batch when one arena does not fit.
// Requests without lifetimes are bumped, in order, above everything placed,
// as the C++ pool does; lifetimes go to the planner.
func (l *ledger) plan() (layout, error) {
	if l.pendingHasLifetimes() {
		return l.planLifetimes()
	}
	// Aligned sizes are multiples of 256, so once the first offset is
	// aligned every later one is too: the batch is one sum.
	start, err := align.Up(l.used, align.CUDA)
	if err != nil {
		return layout{}, l.exhausted(^uint64(0))
	}
	out := layout{end: start}
	for _, b := range l.pending {
		sz := l.span(b.size)
		var ok bool
		if out.end, ok = checked.Add(out.end, sz); !ok {
			return layout{}, l.exhausted(^uint64(0))
		}
		out.sizes += b.size
		out.aligned += sz
	}
	if out.end > l.capacity {
		return layout{}, l.exhausted(out.end)
	}
	return out, l.countable(out.sizes, out.aligned)
}

// countable refuses a batch whose sizes, with those of the buffers already
// placed, add up past 2^64 B, which Stats could not report. Only buffers
// that share memory add up to more than the arena holds, so a batch
// without lifetimes, which fits above the placed buffers, passes unless
// earlier lifetimes shared.
func (l *ledger) countable(sizes, aligned uint64) error {
	_, okSizes := checked.Add(l.requested, sizes)
	_, okAligned := checked.Add(l.unshared, aligned)
	if okSizes && okAligned {
		return nil
	}
	return l.uncountable()
}

func (l *ledger) uncountable() error {
	return fmt.Errorf("%w: %s arena: the sizes of the placed and queued buffers add up past 2^64 B, which Stats could not report",
		ErrInvalidRequest, l.kind)
}

// apply places the pending buffers where out says and empties the queue.
func (l *ledger) apply(out layout) {
	next, _ := align.Up(l.used, align.CUDA) // plan checked it
	for i, b := range l.pending {
		if out.offsets != nil {
			b.offset = out.offsets[i]
		} else {
			b.offset = next
			next += l.span(b.size)
		}
		b.placed.Store(true)
	}
	l.placed = append(l.placed, l.pending...)
	clear(l.pending)
	l.pending = l.pending[:0]
	l.used = max(l.used, out.end)
	l.peak = max(l.peak, l.used)
	l.requested += out.sizes
	l.unshared += out.aligned
}

// reset forgets every buffer, keeping the slices' capacity for the next plan.
func (l *ledger) reset() {
	clear(l.placed)
	l.placed = l.placed[:0]
	clear(l.pending)
	l.pending = l.pending[:0]
	l.used, l.requested, l.unshared = 0, 0, 0
	clear(l.owned)
}

// pendingBytes is the bytes the queue asks for, at most 2^64-1: Satisfy
// refuses a queue that asks for more.
func (l *ledger) pendingBytes() uint64 {
	var n checked.Total
	for _, b := range l.pending {
		n.Add(l.span(b.size))
	}
	if v, ok := n.Uint64(); ok {
		return v
	}
	return math.MaxUint64
}

func (l *ledger) exhausted(need uint64) *ExhaustedError {
	e := &ExhaustedError{Arena: l.kind, Need: need, Have: l.capacity}
	var largest *Buffer
	for _, b := range l.pending {
		if largest == nil || b.size > largest.size {
			largest = b
		}
	}
	if largest != nil {
		e.LargestBytes, e.LargestName = largest.size, requestName(largest.name, largest.size)
	}
	return e
}

// stats is the arena's line of Stats.
func (l *ledger) stats() ArenaStats {
	s := ArenaStats{
		Reserved:  true,
		Capacity:  l.capacity,
		Mapped:    l.capacity,
		Used:      l.used,
		Peak:      l.peak,
		Pending:   l.pendingBytes(),
		Requested: l.requested,
		Padding:   l.unshared - l.requested - l.guard*uint64(len(l.placed)),
		Guards:    l.guard * uint64(len(l.placed)),
		Unshared:  l.unshared,
		Placed:    len(l.placed),
		Queued:    len(l.pending),
	}
	if l.unshared > l.used {
		s.Saved = l.unshared - l.used
	}
	return l.mem.stats(s)
}

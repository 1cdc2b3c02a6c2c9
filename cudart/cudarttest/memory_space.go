package cudarttest

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

const (
	// spaceBase is the lowest fake device address: far above the Go heap
	// (0xc0_0000_0000) and below where Linux places host mmaps (0x7f..), so
	// a device address mistaken for a host one is caught.
	spaceBase uint64 = 0x2000_0000_0000
	// spaceTop bounds the ranges a reservation's hint may name: the 2^48
	// bytes of virtual address space of current GPUs above spaceBase. A
	// hint past it is not honoured.
	spaceTop uint64 = spaceBase + maxReservation
	// placeTop bounds every range placed, with room for the guard gap
	// after it: past spaceTop the fake's space goes up to 2^64, for a fake
	// with more memory than a GPU (WithDeviceMemory), but never past it.
	placeTop uint64 = math.MaxUint64 - 2*guardGap + 1
	// guardGap is left free after every range, so that an overrun by a few
	// bytes lands on no allocation and fails.
	guardGap uint64 = 64 << 10
)

// kind is what a range of the device address space holds.
type kind uint8

const (
	kindDevice kind = iota
	kindManaged
	kindAsync
	kindHostAlias
	kindReservation
)

// region is one live range of the device address space.
type region struct {
	base   uint64
	size   uint64
	kind   kind
	device int
	seq    int        // the call that made it, counted from NewFake
	call   calls.Call // ...and its name
	charge uint64     // bytes counted against the device for r alone
	slot   *chunkSlot // the chunk r shares, if it is small
	mem    backing
	store  sparse // the bytes of device, managed and async memory

	freeQueued bool      // async: a FreeAsync of it is queued
	graph      *graphMem // async: the memory of the capture that allocated it

	prefetched bool // managed: MemPrefetchAsync was called
	prefetchTo int  // managed: its last destination

	host *hostRange // host alias: the host memory it maps

	maps []*mapping // reservation: its mappings, sorted by va
}

func (r *region) end() uint64 { return r.base + r.size }

// describe names r for leak reports and error messages.
func (r *region) describe() string {
	return fmt.Sprintf("%s %s (%s) from %s (call #%d)", kindNames[r.kind], cudart.DevicePtr(r.base), bytesize.Format(r.size), r.call, r.seq)
}

var kindNames = [...]string{
	kindDevice:      "device memory",
	kindManaged:     "managed memory",
	kindAsync:       "stream-ordered memory",
	kindHostAlias:   "mapped host memory",
	kindReservation: "virtual address reservation",
}

// place picks the address of a new range of size bytes aligned to a, in the
// 256 TiB of a GPU's address space (up to spaceTop) while it holds the
// range, else above it, up to placeTop, which only a fake with more memory
// than a GPU reaches (WithDeviceMemory). In each, while there is room above
// everything placed so far, the range goes there, past a guard gap, so that
// a stale pointer reaches no newer allocation for as long as possible. Once
// that room is spent, it goes in the lowest gap between live ranges that
// holds it with a guard gap either side, as CUDA reuses freed address
// ranges. Nothing placed ends past placeTop, so nothing wraps past 2^64;
// where no gap holds the range, the failure is cudaErrorMemoryAllocation.
func (f *Fake) place(size, a uint64) (uint64, *failure) {
	for _, top := range [...]uint64{spaceTop, placeTop} {
		// A range reused below f.next may lie above it too.
		if base, ok := fit(f.next, size, a, top); ok && !f.overlaps(base, size+guardGap) {
			f.next = base + size + guardGap
			return base, nil
		}
		lo := spaceBase
		for _, r := range f.regions {
			if base, ok := fit(lo, size, a, min(top, r.base-guardGap)); ok {
				return base, nil
			}
			lo = max(lo, r.end()+guardGap)
		}
		if base, ok := fit(lo, size, a, top); ok {
			return base, nil
		}
	}
	return 0, fail(2, "no free range of the fake's device address space, [%#x, %#x), holds %s aligned to %s", spaceBase, placeTop, bytesize.Exact(size), bytesize.Format(a))
}

// fit is the lowest address from lo, aligned to a, from which size bytes
// end at or below hi, if there is one.
func fit(lo, size, a, hi uint64) (uint64, bool) {
	base, err := align.Up(lo, a)
	if err != nil || base > hi || size > hi-base {
		return 0, false
	}
	return base, true
}

// insert adds r to the regions, kept sorted by address.
func (f *Fake) insert(r *region) {
	n := len(f.regions)
	if n == 0 || f.regions[n-1].base < r.base {
		f.regions = append(f.regions, r)
		return
	}
	i := sort.Search(n, func(i int) bool { return f.regions[i].base > r.base })
	f.regions = slices.Insert(f.regions, i, r)
}

// remove drops r from the regions.
func (f *Fake) remove(r *region) {
	i, ok := f.index(r.base)
	if ok && f.regions[i] == r {
		f.regions = slices.Delete(f.regions, i, i+1)
	}
}

// index finds the region starting at p.
func (f *Fake) index(p uint64) (int, bool) {
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].base >= p })
	return i, i < len(f.regions) && f.regions[i].base == p
}

// containing returns the region that holds address p, or nil.
func (f *Fake) containing(p uint64) *region {
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].base > p })
	if i == 0 {
		return nil
	}
	r := f.regions[i-1]
	if p >= r.end() {
		return nil
	}
	return r
}

// overlaps reports whether any region intersects [p, p+n).
func (f *Fake) overlaps(p, n uint64) bool {
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].end() > p })
	return i < len(f.regions) && f.regions[i].base < p+n
}

// resolveScratch is resolve into f.scratch, which it keeps for the next
// call: the spans are good until then, and a copy or memset allocates
// nothing to find them.
func (f *Fake) resolveScratch(p cudart.DevicePtr, n uint64, device int) ([]span, *failure) {
	spans, x := f.resolve(f.scratch[:0], p, n, device)
	f.scratch = spans[:0]
	return spans, x
}

// resolve appends to buf the spans that back the device range [p, p+n) as
// device accesses it. The whole range must lie in one live allocation, or in
// mapped, accessible memory of reservations that follow each other with no
// gap (CUDA addresses adjacent reservations as one range, which is how a
// vector grown in place at the hinted address is used); otherwise nothing is
// touched and the failure says where the range went wrong.
func (f *Fake) resolve(buf []span, p cudart.DevicePtr, n uint64, device int) ([]span, *failure) {
	a := uint64(p)
	r := f.containing(a)
	if r == nil {
		return buf, f.stray(a, n)
	}
	if r.kind != kindReservation {
		if n > r.end()-a {
			return buf, invalid("range [%s, +%s) runs %s past the end of %s", p, bytesize.Exact(n), bytesize.Exact(n-(r.end()-a)), r.describe())
		}
		return append(buf, span{b: r.mem, off: a - r.base, n: n}), nil
	}
	for cur, left := a, n; ; {
		k := min(left, r.end()-cur)
		var x *failure
		if buf, x = f.resolveMapped(buf, r, cur, k, device); x != nil {
			return buf, x
		}
		cur, left = cur+k, left-k
		if left == 0 {
			return buf, nil
		}
		next := f.containing(cur)
		if next == nil || next.kind != kindReservation {
			return buf, invalid("range [%s, +%s) runs %s past the end of %s", p, bytesize.Exact(n), bytesize.Exact(left), r.describe())
		}
		r = next
	}
}

// stray explains an address that is in no live allocation.
func (f *Fake) stray(a, n uint64) *failure {
	p := cudart.DevicePtr(a)
	if _, ok := f.freed[a]; ok {
		return invalid("range [%s, +%s) starts at memory that was freed", p, bytesize.Exact(n))
	}
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].base > a })
	if i > 0 && a >= f.regions[i-1].end() && a-f.regions[i-1].end() < guardGap {
		prev := f.regions[i-1]
		return invalid("range [%s, +%s) starts %s past the end of %s", p, bytesize.Exact(n), bytesize.Exact(a-prev.end()), prev.describe())
	}
	return invalid("range [%s, +%s) is in no live device allocation", p, bytesize.Exact(n))
}

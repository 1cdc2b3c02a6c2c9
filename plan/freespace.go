package plan

import (
	"math"
	"sort"

	"github.com/cudapool/cudapool/align"
)

// freeSpace is the free part of the arena while a sweep runs: the maximal
// gaps between the byte ranges taken, the last one reaching to 2^64-1. Gaps
// are indexed by length for best fit and by both ends so that a released
// range merges with its neighbours in constant time.
type freeSpace struct {
	bySize  *treap
	endOf   map[uint64]uint64 // gap start to gap end
	startOf map[uint64]uint64 // gap end to gap start
}

// newFreeSpace starts with the given sorted, disjoint ranges taken.
func newFreeSpace(taken []interval) *freeSpace {
	f := &freeSpace{bySize: newTreap(), endOf: map[uint64]uint64{}, startOf: map[uint64]uint64{}}
	var cur uint64
	for _, iv := range taken {
		if iv.lo > cur {
			f.add(cur, iv.lo)
		}
		cur = iv.hi
	}
	f.add(cur, math.MaxUint64)
	return f
}

func (f *freeSpace) add(lo, hi uint64) {
	f.bySize.insert(gapKey{hi - lo, lo})
	f.endOf[lo] = hi
	f.startOf[hi] = lo
}

func (f *freeSpace) drop(lo, hi uint64) {
	f.bySize.remove(gapKey{hi - lo, lo})
	delete(f.endOf, lo)
	delete(f.startOf, hi)
}

// take marks [lo, hi) taken; it lies inside the gap [glo, ghi).
func (f *freeSpace) take(glo, ghi, lo, hi uint64) {
	f.drop(glo, ghi)
	if lo > glo {
		f.add(glo, lo)
	}
	if ghi > hi {
		f.add(hi, ghi)
	}
}

// release frees [lo, hi), joining it with the gaps it touches.
func (f *freeSpace) release(lo, hi uint64) {
	if below, ok := f.startOf[lo]; ok {
		f.drop(below, lo)
		lo = below
	}
	if above, ok := f.endOf[hi]; ok {
		f.drop(hi, above)
		hi = above
	}
	f.add(lo, hi)
}

// bestFit returns the lowest offset, in the smallest gap that has one, where
// size bytes fit at the alignment without touching the busy ranges (sorted,
// disjoint), and that gap. It reports false when no offset fits below 2^64.
func (f *freeSpace) bestFit(size, al uint64, busy []interval) (off, glo, ghi uint64, ok bool) {
	for k, more := f.bySize.ceiling(gapKey{size, 0}); more; k, more = f.bySize.ceiling(gapKey{k.length, k.start + 1}) {
		glo, ghi = k.start, k.start+k.length
		if off, ok = fitIn(glo, ghi, size, al, busy); ok {
			return off, glo, ghi, true
		}
	}
	return 0, 0, 0, false
}

// fitIn returns the lowest aligned offset in [lo, hi) where size bytes fit
// clear of the busy ranges.
func fitIn(lo, hi, size, al uint64, busy []interval) (uint64, bool) {
	for {
		off, err := align.Up(lo, al)
		if err != nil || off > hi || hi-off < size {
			return 0, false
		}
		k := sort.Search(len(busy), func(k int) bool { return busy[k].hi > off })
		if k == len(busy) || busy[k].lo >= off+size {
			return off, true
		}
		lo = busy[k].hi
	}
}

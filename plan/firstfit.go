package plan

import (
	"cmp"
	"math/bits"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
)

// firstFitByClass plans inputs too large for conflict lists. Items are
// taken by size class (powers of two), largest class first; within a class,
// grouped by the heaviest step of their lifetime, heaviest first (as greedy
// by breadth visits the steps), and within a group in order of first step.
// Each goes to the lowest offset where it fits among the placed items it
// meets. Large classes first keeps the big items low and lets the small
// ones fill the gaps between them. Within a class, the items at the
// heaviest steps, where the arena's top is decided, take the low offsets
// before the items of lighter steps can scatter across them, and step order
// within a group lays items of similar size side by side in time, in rows,
// as a sweep would. On a random trace of 100,000 buffers this ends about
// 2.6% above the lower bound, against 4.4% with step order alone and 6%
// with pure size order.
//
// The placed items are found through an index over time: the steps are cut
// into blocks about as long as a typical lifetime, and each block keeps the
// items that touch it sorted by offset, so an item's neighbours come out of
// two or three sorted lists merged in one pass, during which the lowest gap
// is found. Items that touch many blocks (the long-lived few) are kept in
// one list of their own, which every query merges too.
func firstFitByClass(items []item, busy [][]interval) ([]uint64, uint64, bool) {
	ix := newTimeIndex(items)
	off := make([]uint64, len(items))
	var top uint64
	for _, i := range byClassThenHeaviest(items) {
		o, ok := ix.lowestFit(i, busy[i])
		if !ok {
			return nil, 0, false
		}
		off[i] = o
		top = max(top, o+items[i].size)
		ix.add(i, o)
	}
	return off, top, true
}

// byClassThenHeaviest orders items by power-of-two size class, largest
// first, then by the rank of the heaviest step of their lifetime, then by
// first step.
func byClassThenHeaviest(items []item) []int32 {
	heavy := heaviestStep(items)
	return sortedOrder(len(items), func(a, b int32) int {
		return cmp.Or(cmp.Compare(bits.Len64(items[b].size), bits.Len64(items[a].size)),
			cmp.Compare(heavy[a], heavy[b]), cmp.Compare(items[a].first, items[b].first))
	})
}

// timeIndex holds the placed items by block of compressed steps.
type timeIndex struct {
	items []item
	// lo and hi are each item's first and last block.
	lo, hi []int32
	blocks [][]placedRange
	long   []placedRange
	heads  [][]placedRange
}

// placedRange is a placed item's bytes and steps, kept together so that
// the scan needs no other memory.
type placedRange struct {
	lo, hi      uint64
	first, last int
}

// longBlocks is the number of blocks past which an item is filed in the
// long list instead of every block it touches.
const longBlocks = 8

func newTimeIndex(items []item) *timeIndex {
	// Steps are compressed to the ranks of the first steps, so that steps
	// nobody starts at (and huge step numbers) cost nothing.
	firsts := make([]int, len(items))
	for i, it := range items {
		firsts[i] = it.first
	}
	slices.Sort(firsts)
	firsts = slices.Compact(firsts)
	ix := &timeIndex{items: items, lo: make([]int32, len(items)), hi: make([]int32, len(items))}
	var span int64
	first, last := make([]int, len(items)), make([]int, len(items))
	for i, it := range items {
		// Steps are at most maxStep (see boundSteps): last+1 cannot wrap.
		first[i] = sort.SearchInts(firsts, it.first)
		last[i] = sort.SearchInts(firsts, it.last+1) - 1
		span += int64(last[i] - first[i] + 1)
	}
	width := max(1, int(span/int64(max(len(items), 1))))
	for i := range items {
		ix.lo[i], ix.hi[i] = int32(first[i]/width), int32(last[i]/width)
	}
	ix.blocks = make([][]placedRange, len(firsts)/width+1)
	return ix
}

// lowestFit returns the lowest aligned offset where item i fits clear of
// the placed items it meets and of busy (sorted, disjoint).
func (ix *timeIndex) lowestFit(i int32, busy []interval) (uint64, bool) {
	it := ix.items[i]
	heads := ix.heads[:0]
	for b := ix.lo[i]; b <= ix.hi[i]; b++ {
		if len(ix.blocks[b]) > 0 {
			heads = append(heads, ix.blocks[b])
		}
	}
	if len(ix.long) > 0 {
		heads = append(heads, ix.long)
	}
	ix.heads = heads
	var cur uint64
	for {
		// The next range up, among the lists' heads and busy.
		best := -1
		for k, h := range heads {
			if len(h) > 0 && (best < 0 || h[0].lo < heads[best][0].lo) {
				best = k
			}
		}
		var r interval
		switch {
		case best >= 0 && (len(busy) == 0 || heads[best][0].lo <= busy[0].lo):
			p := heads[best][0]
			heads[best] = heads[best][1:]
			if p.first > it.last || p.last < it.first {
				continue
			}
			r = interval{p.lo, p.hi}
		case len(busy) > 0:
			r, busy = busy[0], busy[1:]
		default:
			o, err := align.Up(cur, it.align)
			_, ok := checked.Add(o, it.size)
			return o, err == nil && ok
		}
		if r.lo > cur {
			if o, err := align.Up(cur, it.align); err == nil && o <= r.lo && r.lo-o >= it.size {
				return o, true
			}
		}
		cur = max(cur, r.hi)
	}
}

// add files item i, placed at o.
func (ix *timeIndex) add(i int32, o uint64) {
	it := ix.items[i]
	r := placedRange{o, o + it.size, it.first, it.last}
	insert := func(list []placedRange) []placedRange {
		k := sort.Search(len(list), func(k int) bool { return list[k].lo > o })
		return slices.Insert(list, k, r)
	}
	if ix.hi[i]-ix.lo[i] >= longBlocks {
		ix.long = insert(ix.long)
		return
	}
	for b := ix.lo[i]; b <= ix.hi[i]; b++ {
		ix.blocks[b] = insert(ix.blocks[b])
	}
}

package plan

import (
	"cmp"

	"github.com/cudapool/cudapool/internal/checked"
)

// rankers are the orders the exact search breaks ties with, tried in turn
// with growing node limits: a search that starts down a bad path is cut off
// early and another order gets its chance. Each ranks items by a
// lexicographic key, largest first: lifetime (in steps), area (bytes times
// steps), and the heaviest section the item lives in (the most bytes it
// competes with). Those three orders in three rotations are what
// MiniMalloc found to complement each other best. The heaviest section is
// measured again, over the items still to place, whenever the search splits
// into independent groups.
var rankers = [][]rankKey{
	{keyWidth, keyArea, keyHeaviest},
	{keyHeaviest, keyArea, keyWidth},
	{keyHeaviest, keyWidth, keyArea},
}

type rankKey func(l *layout, heaviest []uint64, i int32) uint64

func keyWidth(l *layout, _ []uint64, i int32) uint64 { return uint64(length(l.items[i].span)) }

// keyArea saturates for huge sizes over long lifetimes, which rank first
// either way.
func keyArea(l *layout, _ []uint64, i int32) uint64 {
	return checked.SaturatingMul(l.items[i].size, uint64(length(l.items[i].span))+1)
}

func keyHeaviest(_ *layout, heaviest []uint64, i int32) uint64 { return heaviest[i] }

// rankItems writes into rank the positions 0, 1, ... of items ordered by
// the keys, largest first, ties by the order of items.
func rankItems(l *layout, items []int32, heaviest []uint64, keys []rankKey, rank []int32) {
	order := sortedOrder(len(items), func(a, b int32) int {
		ia, ib := items[a], items[b]
		for _, k := range keys {
			if c := cmp.Compare(k(l, heaviest, ib), k(l, heaviest, ia)); c != 0 {
				return c
			}
		}
		return 0
	})
	for r, k := range order {
		rank[items[k]] = int32(r)
	}
}

// heaviest writes, for each of the items, the most bytes that total puts in
// any of its sections.
func (l *layout) heaviest(items []int32, total, h []uint64) {
	for _, i := range items {
		h[i] = 0
		for s := l.lo[i]; s < l.hi[i]; s++ {
			h[i] = max(h[i], total[s])
		}
	}
}

// partTotals returns the bytes alive in each section of the part.
func (l *layout) partTotals(p part) []uint64 {
	total := make([]uint64, l.nsec)
	for _, i := range p.items {
		for s := l.lo[i]; s < l.hi[i]; s++ {
			total[s] += l.items[i].size
		}
	}
	return total
}

package plan

import "cmp"

// rankers are the static orders the exact search breaks ties with, tried in
// turn with growing node limits: a search that starts down a bad path is
// cut off early and another order gets its chance. Each ranks items by a
// lexicographic key, largest first: lifetime (in steps), area (bytes
// times steps), and the heaviest section the item lives in (the
// most bytes it competes with). Those three orders in three rotations are
// what MiniMalloc found to complement each other best.
var rankers = []func(l *layout, p part) []int32{
	rankBy(keyWidth, keyArea, keyHeaviest),
	rankBy(keyHeaviest, keyArea, keyWidth),
	rankBy(keyHeaviest, keyWidth, keyArea),
}

type rankKey func(l *layout, heaviest []uint64, i int32) uint64

func keyWidth(l *layout, _ []uint64, i int32) uint64 { return uint64(length(l.items[i].span)) }

// keyArea may wrap for huge sizes over huge lifetimes; it is only an order.
func keyArea(l *layout, _ []uint64, i int32) uint64 {
	return l.items[i].size * uint64(length(l.items[i].span)+1)
}

func keyHeaviest(_ *layout, heaviest []uint64, i int32) uint64 { return heaviest[i] }

// rankBy returns a ranker that orders the part's items by the keys, largest
// first, ties by index; rank[i] is item i's position.
func rankBy(keys ...rankKey) func(l *layout, p part) []int32 {
	return func(l *layout, p part) []int32 {
		heaviest := l.heaviest(p)
		order := sortedOrder(len(p.items), func(a, b int32) int {
			ia, ib := p.items[a], p.items[b]
			for _, k := range keys {
				if c := cmp.Compare(k(l, heaviest, ib), k(l, heaviest, ia)); c != 0 {
					return c
				}
			}
			return 0
		})
		rank := make([]int32, len(l.items))
		for r, k := range order {
			rank[p.items[k]] = int32(r)
		}
		return rank
	}
}

// heaviest returns, for each item of the part, the most bytes alive in any
// of its sections.
func (l *layout) heaviest(p part) []uint64 {
	total := make([]uint64, l.nsec)
	for _, i := range p.items {
		for s := l.lo[i]; s < l.hi[i]; s++ {
			total[s] += l.items[i].size
		}
	}
	h := make([]uint64, len(l.items))
	for _, i := range p.items {
		for s := l.lo[i]; s < l.hi[i]; s++ {
			h[i] = max(h[i], total[s])
		}
	}
	return h
}

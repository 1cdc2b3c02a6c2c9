package plan

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// sortedOrder returns the item indices sorted by cmpItems, ties broken by
// index so every order is a pure function of the input.
func sortedOrder(n int, cmpItems func(a, b int32) int) []int32 {
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Or(cmpItems(a, b), cmp.Compare(a, b)) })
	return order
}

func length(s span) int { return s.last - s.first }

// bySize is TensorFlow Lite's greedy-by-size order: largest first, longer
// lifetimes first among equals.
func bySize(items []item) []int32 {
	return sortedOrder(len(items), func(a, b int32) int {
		return cmp.Or(cmp.Compare(items[b].size, items[a].size), cmp.Compare(length(items[b].span), length(items[a].span)))
	})
}

// byLength places long-lived items first: they constrain the most others.
func byLength(items []item) []int32 {
	return sortedOrder(len(items), func(a, b int32) int {
		return cmp.Or(cmp.Compare(length(items[b].span), length(items[a].span)), cmp.Compare(items[b].size, items[a].size))
	})
}

// byArea places items by size times lifetime, largest first.
func byArea(items []item) []int32 {
	area := func(i int32) float64 { return float64(items[i].size) * (float64(length(items[i].span)) + 1) }
	return sortedOrder(len(items), func(a, b int32) int { return cmp.Compare(area(b), area(a)) })
}

// byStart places items in step order, largest first among those born at the
// same step: the order a program allocates them in.
func byStart(items []item) []int32 {
	return sortedOrder(len(items), func(a, b int32) int {
		return cmp.Or(cmp.Compare(items[a].first, items[b].first), cmp.Compare(items[b].size, items[a].size))
	})
}

// byBreadth is TensorFlow Lite's greedy-by-breadth order: visit the steps
// from the one with the most bytes alive down, and at each place the items
// alive there that have no offset yet, largest first.
func byBreadth(items []item) []int32 {
	key := heaviestStep(items)
	return sortedOrder(len(items), func(a, b int32) int {
		return cmp.Or(cmp.Compare(key[a], key[b]), cmp.Compare(items[b].size, items[a].size))
	})
}

// heaviestStep returns, for each item, the rank of the heaviest step of its
// lifetime among all steps, heaviest first: the step greedy by breadth
// places it at. It is found by a range-minimum query over the steps where
// some item starts (the bytes alive only grow at those).
func heaviestStep(items []item) []int32 {
	starts := make([]int, len(items))
	for i, it := range items {
		starts[i] = it.first
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	alive := breadths(items, starts)
	byAlive := make([]int32, len(starts))
	for i := range byAlive {
		byAlive[i] = int32(i)
	}
	slices.SortFunc(byAlive, func(a, b int32) int { return cmp.Or(cmp.Compare(alive[b], alive[a]), cmp.Compare(a, b)) })
	rank := make([]int32, len(starts))
	for r, p := range byAlive {
		rank[p] = int32(r)
	}
	rmq := newMinTree(rank)
	key := make([]int32, len(items))
	for i, it := range items {
		lo, _ := slices.BinarySearch(starts, it.first)
		hi := sort.Search(len(starts), func(k int) bool { return starts[k] > it.last })
		key[i] = rmq.min(lo, hi)
	}
	return key
}

// breadths returns the bytes alive at each of the given sorted steps, from
// differences at the steps where items start and after they end. A
// difference may wrap around, but the running sums are the true ones, which
// the lower bound has already shown fit in 64 bits.
func breadths(items []item, steps []int) []uint64 {
	diff := make([]uint64, len(steps)+1)
	for _, it := range items {
		lo, _ := slices.BinarySearch(steps, it.first)
		hi := sort.Search(len(steps), func(k int) bool { return steps[k] > it.last })
		diff[lo] += it.size
		diff[hi] -= it.size
	}
	out := make([]uint64, len(steps))
	var run uint64
	for i := range steps {
		run += diff[i]
		out[i] = run
	}
	return out
}

// minTree answers range-minimum queries in logarithmic time: a segment
// tree stored bottom-up, leaves in the second half, in linear memory.
type minTree []int32

func newMinTree(v []int32) minTree {
	m := len(v)
	t := make(minTree, 2*m)
	copy(t[m:], v)
	for i := m - 1; i > 0; i-- {
		t[i] = min(t[2*i], t[2*i+1])
	}
	return t
}

// min returns the least of v[lo:hi], hi > lo.
func (t minTree) min(lo, hi int) int32 {
	m := len(t) / 2
	least := int32(math.MaxInt32)
	for lo, hi = lo+m, hi+m; lo < hi; lo, hi = lo/2, hi/2 {
		if lo&1 == 1 {
			least = min(least, t[lo])
			lo++
		}
		if hi&1 == 1 {
			hi--
			least = min(least, t[hi])
		}
	}
	return least
}

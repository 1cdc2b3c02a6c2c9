package plan

import (
	"slices"
	"sort"
)

// conflicts is the conflict graph of the new items in compressed rows: the
// items alive at a common step with item i are adj[start[i]:start[i+1]].
type conflicts struct {
	start []int32
	adj   []int32
}

func (c *conflicts) of(i int32) []int32 { return c.adj[c.start[i]:c.start[i+1]] }

// pairCount returns how many pairs of items conflict, given the items'
// indices sorted by first step. Two items conflict when the later-starting
// one starts no later than the other ends, so each item's partners among the
// later-starting ones form a run of the sorted order found by binary search.
func pairCount(items []item, sorted []int32) int64 {
	var n int64
	for p, i := range sorted {
		later := sorted[p+1:]
		last := items[i].last
		n += int64(sort.Search(len(later), func(k int) bool { return items[later[k]].first > last }))
	}
	return n
}

// buildConflicts lists every conflicting pair in both directions. Its cost is
// the number of pairs, which the caller bounds first with pairCount.
func buildConflicts(items []item, sorted []int32) conflicts {
	deg := make([]int32, len(items)+1)
	forEachPair(items, sorted, func(a, b int32) {
		deg[a+1]++
		deg[b+1]++
	})
	for i := 1; i < len(deg); i++ {
		deg[i] += deg[i-1]
	}
	c := conflicts{start: deg, adj: make([]int32, deg[len(items)])}
	fill := slices.Clone(deg[:len(items)])
	forEachPair(items, sorted, func(a, b int32) {
		c.adj[fill[a]] = b
		fill[a]++
		c.adj[fill[b]] = a
		fill[b]++
	})
	return c
}

func forEachPair(items []item, sorted []int32, f func(a, b int32)) {
	for p, i := range sorted {
		for _, j := range sorted[p+1:] {
			if items[j].first > items[i].last {
				break
			}
			f(i, j)
		}
	}
}

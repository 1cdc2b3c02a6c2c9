package plan

import (
	"cmp"
	"math"
	"slices"

	"github.com/cudapool/cudapool/internal/checked"
)

// fixedBusy returns, for each item, the byte ranges taken by placed buffers
// alive at a common step with it, sorted and merged. Placed buffers alive
// over every item's steps (the pool's whole-plan buffers) are merged once and
// shared, so many placed buffers cost one pass, not one per item; their
// ranges are returned as global.
func fixedBusy(items []item, fixed []span, off []uint64) (busy [][]interval, global []interval) {
	busy = make([][]interval, len(items))
	if len(fixed) == 0 || len(items) == 0 {
		return busy, nil
	}
	lo, hi := items[0].first, items[0].last
	for _, it := range items {
		lo, hi = min(lo, it.first), max(hi, it.last)
	}
	isGlobal := func(s span) bool { return s.first <= lo && s.last >= hi }
	var local []int32
	for f, s := range fixed {
		if !isGlobal(s) && s.first <= hi && s.last >= lo {
			local = append(local, int32(f))
		}
	}
	global = globalBusy(fixed, off, isGlobal)
	slices.SortFunc(local, func(a, b int32) int {
		return cmp.Or(cmp.Compare(fixed[a].first, fixed[b].first), cmp.Compare(a, b))
	})
	var mine []interval
	for i, it := range items {
		mine = append(mine[:0], global...)
		for _, f := range local {
			if fixed[f].first > it.last {
				break
			}
			if fixed[f].last >= it.first {
				mine = append(mine, interval{off[f], off[f] + fixed[f].size})
			}
		}
		if len(mine) == len(global) {
			busy[i] = global
			continue
		}
		busy[i] = merged(slices.Clone(mine))
	}
	return busy, global
}

// globalBusy merges the ranges of the placed buffers that isGlobal picks,
// which are all alive at a common step. A valid plan keeps such buffers
// disjoint, so when their sizes add up to the distance from the lowest start
// to the highest end they tile it without a gap, which is the usual case for
// buffers a pool stacked one on another, and a single range stands for all
// of them without a sort. Had they overlapped, that range would only be too
// cautious, never wrong.
func globalBusy(fixed []span, off []uint64, isGlobal func(span) bool) []interval {
	lo, hi := uint64(math.MaxUint64), uint64(0)
	var sum uint64
	covered := false
	for f, s := range fixed {
		if !isGlobal(s) {
			continue
		}
		lo, hi = min(lo, off[f]), max(hi, off[f]+s.size)
		var ok bool
		if sum, ok = checked.Add(sum, s.size); !ok {
			// 2^64 bytes or more cover any range.
			covered = true
		}
	}
	if lo > hi {
		return nil
	}
	if covered || sum >= hi-lo {
		return []interval{{lo, hi}}
	}
	var ivs []interval
	for f, s := range fixed {
		if isGlobal(s) {
			ivs = append(ivs, interval{off[f], off[f] + s.size})
		}
	}
	return merged(ivs)
}

// merged sorts byte ranges and joins those that touch or overlap, in place.
func merged(ivs []interval) []interval {
	if len(ivs) == 0 {
		return nil
	}
	sortIntervals(ivs)
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		top := &out[len(out)-1]
		if iv.lo <= top.hi {
			top.hi = max(top.hi, iv.hi)
			continue
		}
		out = append(out, iv)
	}
	return out
}

func sortIntervals(ivs []interval) {
	slices.SortFunc(ivs, func(a, b interval) int { return cmp.Compare(a.lo, b.lo) })
}

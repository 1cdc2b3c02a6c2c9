package plan

import (
	"slices"
	"sort"
)

// layout is a problem as the exact search sees it. Steps are compressed into
// sections, the maximal runs of steps over which no item starts or ends, so
// that per-step sums cost one entry per section however many steps there
// are; an item covers the sections [lo, hi).
type layout struct {
	items []item
	lo    []int32
	hi    []int32
	conf  conflicts
	nsec  int
	// secStart and secItems list the items alive in each section:
	// section s has secItems[secStart[s]:secStart[s+1]].
	secStart []int32
	secItems []int32
	// parts are the independent sub-problems: runs of sections that no item
	// crosses into from outside. A layout of each gives a layout of all.
	parts []part
}

// part is one independent sub-problem: its items and its sections.
type part struct {
	items    []int32
	slo, shi int32
}

func newLayout(items []item, conf conflicts) *layout {
	// Steps are at most maxStep (see boundSteps): last+1 cannot wrap.
	bounds := make([]int, 0, 2*len(items))
	for _, it := range items {
		bounds = append(bounds, it.first, it.last+1)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	l := &layout{items: items, conf: conf, nsec: len(bounds) - 1,
		lo: make([]int32, len(items)), hi: make([]int32, len(items))}
	at := func(step int) int32 { return int32(sort.SearchInts(bounds, step)) }
	// cover[s] counts the items alive across the boundary between sections
	// s-1 and s; where none is, the problem splits.
	cover := make([]int32, l.nsec+1)
	for i, it := range items {
		l.lo[i], l.hi[i] = at(it.first), at(it.last+1)
		cover[l.lo[i]+1]++
		cover[l.hi[i]]--
	}
	var run int32
	start := int32(0)
	owner := make([]int32, l.nsec)
	for s := int32(1); s <= int32(l.nsec); s++ {
		run += cover[s]
		if s == int32(l.nsec) || run == 0 {
			for k := start; k < s; k++ {
				owner[k] = int32(len(l.parts))
			}
			l.parts = append(l.parts, part{slo: start, shi: s})
			start = s
		}
	}
	for i := range items {
		p := &l.parts[owner[l.lo[i]]]
		p.items = append(p.items, int32(i))
	}
	l.secStart = make([]int32, l.nsec+1)
	for i := range items {
		for s := l.lo[i]; s < l.hi[i]; s++ {
			l.secStart[s+1]++
		}
	}
	for s := 1; s <= l.nsec; s++ {
		l.secStart[s] += l.secStart[s-1]
	}
	l.secItems = make([]int32, l.secStart[l.nsec])
	fill := slices.Clone(l.secStart)
	for i := range items {
		for s := l.lo[i]; s < l.hi[i]; s++ {
			l.secItems[fill[s]] = int32(i)
			fill[s]++
		}
	}
	l.parts = slices.DeleteFunc(l.parts, func(p part) bool { return len(p.items) == 0 })
	return l
}

func (l *layout) inSection(s int32) []int32 { return l.secItems[l.secStart[s]:l.secStart[s+1]] }

package plan

import (
	"cmp"
	"slices"
)

// sweep plans inputs too large for the search in one pass over the steps,
// the way a linear-scan register allocator does: items are placed in order
// of their first step, each by best fit among the gaps left by the items
// alive at that step, and an item's bytes return to the free space after its
// last step. Placing in step order means the items alive at a step are
// exactly the placed ones an item can conflict with, so no conflict list is
// needed and each item costs a few logarithmic operations, however many
// others are alive. Placed buffers alive throughout are taken up front;
// other placed buffers are avoided through each item's busy list.
func sweep(items []item, busy [][]interval, global []interval) ([]uint64, uint64, bool) {
	order := byStart(items)
	ends := slices.Clone(order)
	slices.SortFunc(ends, func(a, b int32) int {
		return cmp.Or(cmp.Compare(items[a].last, items[b].last), cmp.Compare(a, b))
	})
	free := newFreeSpace(global)
	off := make([]uint64, len(items))
	var top uint64
	e := 0
	for _, i := range order {
		it := items[i]
		for ; e < len(ends) && items[ends[e]].last < it.first; e++ {
			j := ends[e]
			free.release(off[j], off[j]+items[j].size)
		}
		o, glo, ghi, ok := free.bestFit(it.size, it.align, busy[i])
		if !ok {
			return nil, 0, false
		}
		free.take(glo, ghi, o, o+it.size)
		off[i] = o
		top = max(top, o+it.size)
	}
	return off, top, true
}

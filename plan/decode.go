package plan

import (
	"math"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
)

// decoder turns a placement order into offsets: each item in turn goes to
// the smallest gap, among the byte ranges of the items already placed and
// alive with it, that holds it (best fit, lowest on ties), or on top of them
// when none does. This is the placement rule of TensorFlow Lite's greedy
// planners; the order is what the search varies.
type decoder struct {
	items []item
	conf  conflicts
	// busy[i] holds the byte ranges of placed buffers alive with item i.
	busy [][]interval
	off  []uint64
	// placed[i] == gen when item i has an offset in the current decode;
	// bumping gen forgets every offset at once.
	placed []uint32
	gen    uint32
	ivs    []interval
}

func newDecoder(items []item, conf conflicts, busy [][]interval) *decoder {
	return &decoder{
		items:  items,
		conf:   conf,
		busy:   busy,
		off:    make([]uint64, len(items)),
		placed: make([]uint32, len(items)),
	}
}

// outcome is what one decode produced.
type outcome struct {
	// top is the highest end among the items placed.
	top uint64
	// complete is false when the decode stopped early (see decode).
	complete bool
	// over is the position in the order of the first item that ended above
	// the goal, or -1.
	over int
	// overflow reports an offset that does not fit in 64 bits.
	overflow bool
}

// decode places the items in order. It notes the first item that ends above
// goal, and stops as soon as an item ends at or above bound, since such a
// plan cannot beat the best one already known.
func (d *decoder) decode(order []int32, goal, bound uint64) outcome {
	d.gen++
	if d.gen == 0 {
		clear(d.placed)
		d.gen = 1
	}
	res := outcome{over: -1, complete: true}
	for p, i := range order {
		off, fits := d.fit(i)
		end, ok := checked.Add(off, d.items[i].size)
		if !fits || !ok {
			return outcome{overflow: true, over: -1}
		}
		d.off[i] = off
		d.placed[i] = d.gen
		res.top = max(res.top, end)
		if end > goal && res.over < 0 {
			res.over = p
		}
		if end >= bound {
			res.complete = false
			return res
		}
	}
	return res
}

// fit finds item i's offset among the placed items conflicting with it.
func (d *decoder) fit(i int32) (uint64, bool) {
	ivs := d.ivs[:0]
	for _, j := range d.conf.of(i) {
		if d.placed[j] == d.gen {
			ivs = append(ivs, interval{d.off[j], d.off[j] + d.items[j].size})
		}
	}
	sortIntervals(ivs)
	d.ivs = ivs
	return bestFit(ivs, d.busy[i], d.items[i].size, d.items[i].align)
}

// bestFit walks two sorted lists of taken byte ranges together and returns
// the offset of the smallest gap that holds size bytes at the alignment,
// or the first aligned offset above everything. It reports false when that
// offset does not fit in 64 bits.
func bestFit(a, b []interval, size, al uint64) (uint64, bool) {
	var cur uint64
	best, bestGap := uint64(0), uint64(math.MaxUint64)
	found := false
	for len(a) > 0 || len(b) > 0 {
		var iv interval
		if len(b) == 0 || (len(a) > 0 && a[0].lo <= b[0].lo) {
			iv, a = a[0], a[1:]
		} else {
			iv, b = b[0], b[1:]
		}
		if iv.lo > cur {
			if o, err := align.Up(cur, al); err == nil && o <= iv.lo && iv.lo-o >= size && iv.lo-cur < bestGap {
				best, bestGap, found = o, iv.lo-cur, true
			}
		}
		cur = max(cur, iv.hi)
	}
	if found {
		return best, true
	}
	o, err := align.Up(cur, al)
	return o, err == nil
}

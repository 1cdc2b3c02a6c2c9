package plan

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
)

// dfs is a complete depth-first search for a layout of one part under a
// capacity. It only builds canonical layouts: every item sits at 0 or
// directly on an item it meets in time, and items are placed in increasing
// order of (offset, rank), rank being the item's position in a fixed
// preorder. Any layout that fits can be pushed down until it is of that
// form, and then the order of placement is unique, so the search meets each
// candidate layout once and fails only when no layout fits.
//
// Four rules prune it. An item's offset can only grow as items are placed
// under it, and every item still to come lands at or above the last offset,
// so a section whose remaining items do not fit between their lowest
// possible offset and the capacity is a dead end (the per-step sum). An
// item placed at or above the top some other waiting item would reach from
// where it could sit now leaves a gap that item could fill, and pushing
// down would fill it, so that layout is searched elsewhere (dominance). An
// item that meets no waiting item cannot change what follows, so if the
// search fails after it, it fails after any other choice too. And once the
// waiting items fall into groups that no item joins across a step, each
// group is searched on its own: a group that fails fails the node, however
// the others are laid out.
type dfs struct {
	l    *layout
	cap  uint64
	rank []int32
	// keys rank the items of each independent group afresh, or nil to
	// keep the ranks solve was given; ranked saves the ranks they replace,
	// as pairs of item and rank.
	keys   []rankKey
	ranked []int32
	heavy  []uint64

	off    []uint64
	placed []bool
	// minOff[i] is where item i would go now: the aligned top of the
	// highest placed item it meets.
	minOff []uint64
	// floor[s] is the top of the last item placed in section s: every item
	// to come in s lands at or above it.
	floor []uint64
	// total[s] is the bytes of the items in s still to place.
	total []uint64
	// cuts[s] counts the waiting items alive in both sections s-1 and s.
	cuts []int32
	// live[lo:hi] holds the items still to place of the group being
	// searched; liveAt[i] is i's position in live.
	live   []int32
	liveAt []int32
	cands  []int32
	// maxes is a stack of outerMaxes' arrays, one per node being searched.
	maxes []uint64
	undo  []change

	nodes, limit int64
	stop         *stopper
	// quit is raised when the portfolio no longer needs this search.
	quit *atomic.Bool
}

// change records what the search overwrote, to restore it when it backs up.
type change struct {
	kind changeKind
	at   int32
	old  uint64
}

type changeKind int8

const (
	// minOffChange: item at's minimum offset was old.
	minOffChange changeKind = iota
	// floorChange: section at's floor was old.
	floorChange
	// placeChange: item at was placed.
	placeChange
)

// result of a search.
type verdict int8

const (
	// fits: a layout was found and its offsets are in off.
	fits verdict = iota
	// noFit: the search was exhausted, so no layout exists.
	noFit
	// outOfNodes: the node limit ended the search first.
	outOfNodes
	// stopped: the caller's time limit or context ended the search first.
	stopped
	// crashed: a search goroutine panicked; the portfolio holds the error.
	crashed
)

func newDFS(l *layout, capacity uint64, stop *stopper) *dfs {
	n := len(l.items)
	return &dfs{
		l: l, cap: capacity, stop: stop,
		off: make([]uint64, n), placed: make([]bool, n), minOff: make([]uint64, n),
		floor: make([]uint64, l.nsec), total: make([]uint64, l.nsec),
		cuts: make([]int32, l.nsec+1),
		live: make([]int32, 0, n), liveAt: make([]int32, n),
		rank: make([]int32, n), heavy: make([]uint64, n),
	}
}

// solve searches part p with items ranked by rank, within limit nodes. On
// fits, off holds the part's offsets.
func (d *dfs) solve(p part, rank []int32, keys []rankKey, limit int64) verdict {
	copy(d.rank, rank)
	d.keys, d.ranked, d.nodes, d.limit = keys, d.ranked[:0], 0, limit
	d.live, d.cands, d.undo = d.live[:0], d.cands[:0], d.undo[:0]
	for _, i := range p.items {
		d.placed[i], d.minOff[i] = false, 0
		d.liveAt[i] = int32(len(d.live))
		d.live = append(d.live, i)
	}
	for s := p.slo; s < p.shi; s++ {
		d.floor[s], d.total[s], d.cuts[s] = 0, 0, 0
	}
	for _, i := range p.items {
		d.addItem(i, 1)
	}
	if !d.checkAll(0, len(d.live), p.slo, p.shi) {
		return noFit
	}
	return d.search(0, len(d.live), p.slo, p.shi, 0, -1)
}

// addItem counts item i as waiting (sign 1) or no longer (sign -1) in the
// sections' totals and cuts.
func (d *dfs) addItem(i int32, sign int32) {
	size := d.l.items[i].size
	lo, hi := d.l.lo[i], d.l.hi[i]
	for s := lo; s < hi; s++ {
		if sign > 0 {
			d.total[s] += size
		} else {
			d.total[s] -= size
		}
	}
	for s := lo + 1; s < hi; s++ {
		d.cuts[s] += sign
	}
}

// search places the items of live[lo:hi], which lie in sections [slo, shi),
// all at (offset, rank) after (lastOff, lastRank).
func (d *dfs) search(lo, hi int, slo, shi int32, lastOff uint64, lastRank int32) verdict {
	if lo == hi {
		return fits
	}
	d.nodes++
	if d.nodes > d.limit {
		return outOfNodes
	}
	if d.nodes&1023 == 0 && (d.quit.Load() || d.stop.done()) {
		return stopped
	}
	items := d.l.items
	live := d.live[lo:hi]
	reach := uint64(math.MaxUint64)
	for _, i := range live {
		lowest := max(d.minOff[i], lastOff)
		if lowest > d.cap || items[i].size > d.cap-lowest {
			return noFit
		}
		reach = min(reach, d.minOff[i]+items[i].size)
	}
	mbase := len(d.maxes)
	d.outerMaxes(slo, shi)
	maxes := d.maxes[mbase:]
	n := int(shi - slo)
	base := len(d.cands)
	for _, i := range live {
		o := d.minOff[i]
		if o >= reach || o < lastOff || (o == lastOff && d.rank[i] < lastRank) {
			continue
		}
		// Placing i at o bounds every section outside its span at o; the
		// heaviest of them must still fit above it.
		if outside := max(maxes[d.l.lo[i]-slo], maxes[n+1+int(d.l.hi[i]-slo)]); outside > d.cap-o {
			continue
		}
		d.cands = append(d.cands, i)
	}
	slices.SortFunc(d.cands[base:], func(a, b int32) int {
		return cmp.Or(cmp.Compare(d.minOff[a], d.minOff[b]), cmp.Compare(d.rank[a], d.rank[b]))
	})
	res := noFit
	for k := base; k < len(d.cands); k++ {
		c := d.cands[k]
		x := d.minOff[c]
		mark := len(d.undo)
		alone, split, a, b := d.place(c, x, hi, slo, shi)
		v := noFit
		if d.check(c, x, lo, hi-1, a, b, slo, shi) {
			if split {
				v = d.searchGroups(lo, hi-1, x, d.rank[c])
			} else {
				v = d.search(lo, hi-1, slo, shi, x, d.rank[c])
			}
		}
		if v == fits {
			d.cands, d.maxes = d.cands[:base], d.maxes[:mbase]
			return fits
		}
		d.unwind(mark)
		if v != noFit {
			res = v
			break
		}
		if alone {
			break
		}
	}
	d.cands, d.maxes = d.cands[:base], d.maxes[:mbase]
	return res
}

// outerMaxes pushes onto maxes the largest section totals of [slo, shi)
// before each section (slo..shi, prefix maxima) and from each section on
// (suffix maxima), so that check can tell the heaviest section outside a
// candidate's span in constant time.
func (d *dfs) outerMaxes(slo, shi int32) {
	n := int(shi - slo)
	at := len(d.maxes)
	d.maxes = append(d.maxes, make([]uint64, 2*(n+1))...)
	pre, suf := d.maxes[at:at+n+1], d.maxes[at+n+1:]
	for k := range n {
		pre[k+1] = max(pre[k], d.total[slo+int32(k)])
	}
	for k := n - 1; k >= 0; k-- {
		suf[k] = max(suf[k+1], d.total[slo+int32(k)])
	}
}

// searchGroups splits the waiting items live[lo:hi] into groups that no
// item joins across a section boundary and searches each on its own.
func (d *dfs) searchGroups(lo, hi int, lastOff uint64, lastRank int32) verdict {
	live := d.live[lo:hi]
	slices.SortFunc(live, func(a, b int32) int {
		return cmp.Or(cmp.Compare(d.l.lo[a], d.l.lo[b]), cmp.Compare(a, b))
	})
	for k, i := range live {
		d.liveAt[i] = int32(lo + k)
	}
	for start := 0; start < len(live); {
		end, shi := start+1, d.l.hi[live[start]]
		for end < len(live) && d.l.lo[live[end]] < shi {
			shi = max(shi, d.l.hi[live[end]])
			end++
		}
		slo := d.l.lo[live[start]]
		if v := d.searchGroup(lo+start, lo+end, slo, shi, lastOff, lastRank); v != fits {
			return v
		}
		start = end
	}
	return fits
}

// searchGroup searches one independent group. With keys, its items are
// ranked afresh by the bytes still to place, and the search starts its
// canonical order over (offset 0, any rank): the group's layouts are
// independent of the rest, so ordering them among themselves is enough.
func (d *dfs) searchGroup(lo, hi int, slo, shi int32, lastOff uint64, lastRank int32) verdict {
	if d.keys == nil {
		return d.search(lo, hi, slo, shi, lastOff, lastRank)
	}
	items := d.live[lo:hi]
	mark := len(d.ranked)
	for _, i := range items {
		d.ranked = append(d.ranked, i, d.rank[i])
	}
	d.l.heaviest(items, d.total, d.heavy)
	rankItems(d.l, items, d.heavy, d.keys, d.rank)
	v := d.search(lo, hi, slo, shi, 0, -1)
	// The enclosing search goes on with the ranks it had, whatever this
	// group found.
	for k := mark; k < len(d.ranked); k += 2 {
		d.rank[d.ranked[k]] = d.ranked[k+1]
	}
	d.ranked = d.ranked[:mark]
	return v
}

// place puts item c, which is in live[:hi] and in the group of sections
// [slo, shi), at x. It reports whether c meets no waiting item, and whether
// placing it split the group's waiting items into independent groups, and
// the sections [a, b) where the waiting items' offsets changed.
func (d *dfs) place(c int32, x uint64, hi int, slo, shi int32) (alone, split bool, a, b int32) {
	it := d.l.items[c]
	d.off[c], d.placed[c] = x, true
	last := d.live[hi-1]
	d.live[d.liveAt[c]], d.liveAt[last] = last, d.liveAt[c]
	d.live[hi-1], d.liveAt[c] = c, int32(hi-1)
	d.undo = append(d.undo, change{kind: placeChange, at: c})
	d.addItem(c, -1)
	top := x + it.size
	alone = true
	a, b = d.l.lo[c], d.l.hi[c]
	for _, j := range d.l.conf.of(c) {
		if d.placed[j] {
			continue
		}
		alone = false
		a, b = min(a, d.l.lo[j]), max(b, d.l.hi[j])
		t := alignUpSat(top, d.l.items[j].align)
		if d.minOff[j] < t {
			d.undo = append(d.undo, change{kind: minOffChange, at: j, old: d.minOff[j]})
			d.minOff[j] = t
		}
	}
	for s := d.l.lo[c]; s < d.l.hi[c]; s++ {
		d.undo = append(d.undo, change{kind: floorChange, at: s, old: d.floor[s]})
		d.floor[s] = top
	}
	for s := d.l.lo[c] + 1; s < d.l.hi[c] && !split; s++ {
		split = d.cuts[s] == 0 && d.waitingIn(slo, s) && d.waitingIn(s, shi)
	}
	return alone, split, a, b
}

// waitingIn reports whether an item still to place lives in a section of
// [from, to).
func (d *dfs) waitingIn(from, to int32) bool {
	for s := from; s < to; s++ {
		if d.total[s] > 0 {
			return true
		}
	}
	return false
}

// unwind undoes every change since mark, placements included. The waiting
// items stay where they are in live: each search keeps its own bounds.
func (d *dfs) unwind(mark int) {
	for k := len(d.undo) - 1; k >= mark; k-- {
		ch := d.undo[k]
		switch ch.kind {
		case floorChange:
			d.floor[ch.at] = ch.old
		case minOffChange:
			d.minOff[ch.at] = ch.old
		case placeChange:
			d.placed[ch.at] = false
			d.addItem(ch.at, 1)
		}
	}
	d.undo = d.undo[:mark]
}

// checkAll is the per-step sum: in every section of [slo, shi), the
// waiting items of live[lo:hi] must fit between the lowest offset any of
// them can take there and the capacity. That offset is at least the
// section's floor and the least minimum offset among them; the latter is
// looked for only in sections tight enough for it to matter, and the look
// stops at the first waiting item low enough.
func (d *dfs) checkAll(lo, hi int, slo, shi int32) bool {
	highest := d.highest(lo, hi)
	for s := slo; s < shi; s++ {
		t := d.total[s]
		if t == 0 {
			continue
		}
		if f := d.floor[s]; f > d.cap || t > d.cap-f {
			return false
		}
		if slack := d.cap - t; highest > slack && !d.someBelow(s, slack) {
			return false
		}
	}
	return true
}

// check is checkAll after c was placed at x, knowing that the state passed
// it before and that x was already compared with the sections outside c's
// span when c became a candidate: what is left is x against the sections
// inside c's span, the floors and totals there, and the minimum offsets in
// [a, b).
func (d *dfs) check(c int32, x uint64, lo, hi int, a, b, slo, shi int32) bool {
	for s := d.l.lo[c]; s < d.l.hi[c]; s++ {
		t := d.total[s]
		if t == 0 {
			continue
		}
		if f := max(x, d.floor[s]); f > d.cap || t > d.cap-f {
			return false
		}
	}
	highest := d.highest(lo, hi)
	for s := max(a, slo); s < min(b, shi); s++ {
		t := d.total[s]
		if slack := d.cap - t; t > 0 && highest > slack && !d.someBelow(s, slack) {
			return false
		}
	}
	return true
}

// highest is the largest minimum offset among live[lo:hi].
func (d *dfs) highest(lo, hi int) uint64 {
	var h uint64
	for _, i := range d.live[lo:hi] {
		h = max(h, d.minOff[i])
	}
	return h
}

// someBelow reports whether a waiting item of section s can go at or below
// offset o.
func (d *dfs) someBelow(s int32, o uint64) bool {
	for _, i := range d.l.inSection(s) {
		if !d.placed[i] && d.minOff[i] <= o {
			return true
		}
	}
	return false
}

// alignUpSat rounds v up to a multiple of the power of two a, saturating at
// the largest such multiple below 2^64: offsets that high never fit a
// capacity.
func alignUpSat(v, a uint64) uint64 {
	if v > math.MaxUint64-(a-1) {
		return math.MaxUint64 &^ (a - 1)
	}
	return (v + a - 1) &^ (a - 1)
}

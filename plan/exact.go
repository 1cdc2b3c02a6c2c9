package plan

import "math"

// maxExactTop keeps the exact search's sums and alignments far from 2^64:
// layouts whose greedy arena is above it are left to the greedy planners.
const maxExactTop = math.MaxUint64 / 4

// defaultWork is the default budget of the search that lowers an arena
// without a capacity or time limit, in nodes times items: some 10 ms of
// search on a graph of a few hundred buffers.
const defaultWork = 1 << 19

// exactSearch runs the exact search on the greedy layout offs, whose arena
// is top, and returns the arena it reached and whether that is proven the
// least possible. With a capacity it looks for a layout within it; else it
// lowers the arena toward the lower bound lb within the default node
// budget or the time limit.
func exactSearch(l *layout, cfg config, offs []uint64, top, lb uint64) (uint64, bool) {
	limit := cfg.limit
	if cfg.hasCap && limit == 0 {
		limit = DefaultCapacityTimeLimit
	}
	s := &search{l: l, stop: newStopper(cfg.ctx, limit), budget: math.MaxInt64}
	if cfg.hasCap {
		switch s.fit(offs, cfg.capacity) {
		case fits:
			return layoutTop(l, offs), false
		case noFit:
			return top, true
		}
		return top, false
	}
	if cfg.limit == 0 {
		s.budget = defaultWork / int64(len(l.items))
	}
	return s.improve(offs, top, lb)
}

// search drives the exact search over the independent parts of a layout.
// It starts from a heuristic layout (the incumbent) and searches only the
// parts whose incumbent does not already meet the target, so a part the
// greedy planner solved costs nothing.
type search struct {
	l    *layout
	stop *stopper
	// budget is what is left of the node budget, counted as the sum of the
	// node limits of the jobs run, so that it is spent the same way
	// whatever the speed of the machine.
	budget int64
}

// fit tries to bring every part at or below capacity, updating off in
// place. It returns fits, noFit when some part provably cannot fit, or why
// it stopped.
func (s *search) fit(off []uint64, capacity uint64) verdict {
	res := fits
	for _, p := range s.l.parts {
		if partTop(s.l, p, off) <= capacity {
			continue
		}
		pf := &portfolio{l: s.l, capacity: capacity, stop: s.stop, budget: s.budget}
		v, offs := pf.solve(p)
		s.budget -= pf.spent
		switch v {
		case fits:
			for k, i := range p.items {
				off[i] = offs[k]
			}
		case noFit:
			return noFit
		default:
			res = v
		}
	}
	return res
}

// improve lowers the arena of the layout off, whose top is top, one step
// at a time until it reaches goal, the search proves that no lower arena
// exists, or the budget ends. It returns the new top and whether that top
// is proven optimal.
func (s *search) improve(off []uint64, top, goal uint64) (uint64, bool) {
	trial := make([]uint64, len(off))
	for top > goal {
		copy(trial, off)
		switch s.fit(trial, top-1) {
		case fits:
			copy(off, trial)
			top = layoutTop(s.l, off)
		case noFit:
			return top, true
		default:
			return top, false
		}
	}
	return top, true
}

func partTop(l *layout, p part, off []uint64) uint64 {
	var top uint64
	for _, i := range p.items {
		top = max(top, off[i]+l.items[i].size)
	}
	return top
}

func layoutTop(l *layout, off []uint64) uint64 {
	var top uint64
	for i, it := range l.items {
		top = max(top, off[i]+it.size)
	}
	return top
}

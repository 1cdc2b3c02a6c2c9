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
// least possible, or the error of a search goroutine that panicked. With a
// capacity it looks for a layout within it; else it lowers the arena toward
// the lower bound lb within the default node budget or the time limit.
func exactSearch(l *layout, cfg config, offs []uint64, top, lb uint64) (uint64, bool, error) {
	limit := cfg.limit
	if cfg.hasCap && limit == 0 {
		limit = DefaultCapacityTimeLimit
	}
	s := &search{l: l, stop: newStopper(cfg.ctx, limit), budget: math.MaxInt64}
	if cfg.hasCap {
		switch s.fit(offs, cfg.capacity) {
		case fits:
			return layoutTop(l, offs), false, nil
		case noFit:
			return top, true, nil
		}
		return top, false, s.err
	}
	if cfg.limit == 0 {
		s.budget = defaultWork / int64(len(l.items))
	}
	top, proven := s.improve(offs, top, lb)
	return top, proven, s.err
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
	// err is the panic of a search goroutine, which ended the search.
	err error
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
		if v == crashed {
			s.err = pf.err
			return crashed
		}
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

// improve lowers the arena of the layout off, whose top is top, toward
// goal, a bound no layout beats, until it gets there, the search proves
// the arena optimal, or the budget ends. It returns the new top and whether
// that top is proven optimal.
//
// A tight capacity prunes hard, so a layout at the bound itself is often
// quicker to find than one just below the current top: the targets are
// chosen by bisection between the highest capacity proven too small and
// the best top, starting at the bound. Each attempt gets a node cap; one
// that runs out of nodes undecided moves the next target halfway up toward
// the top, and once it gets there the cap doubles and the bisection starts
// over.
func (s *search) improve(off []uint64, top, goal uint64) (uint64, bool) {
	trial := make([]uint64, len(off))
	lo, target := goal, goal
	cap0 := int64(len(s.l.items)) * attemptNodes
	per := min(cap0, max(s.budget/2, 1))
	for top > lo {
		if s.budget <= 0 {
			return top, false
		}
		copy(trial, off)
		left := s.budget
		s.budget = min(left, per)
		v := s.fit(trial, target)
		spent := min(left, per) - s.budget
		s.budget = left - spent
		if spent == 0 && v == outOfNodes {
			// Not even the first job fitted in what is left.
			return top, false
		}
		switch v {
		case fits:
			copy(off, trial)
			top = layoutTop(s.l, off)
			target = lo + (top-1-lo)/2
		case noFit:
			lo = target + 1
			target = lo + (top-1-lo)/2
		case outOfNodes:
			if target >= top-1 {
				per = min(2*per, math.MaxInt64/4)
				target = lo + (top-1-lo)/2
			} else {
				target += (top - target) / 2
			}
		default:
			return top, false
		}
	}
	return top, true
}

// attemptNodes is the node cap of improve's first attempts, per item.
const attemptNodes = 64

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

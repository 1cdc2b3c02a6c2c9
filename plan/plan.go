package plan

import (
	"slices"

	"github.com/dustin/go-humanize"
)

// Result is a plan: where each new request goes and how big the arena is.
type Result struct {
	// Offsets holds one offset per request, in the order of the requests,
	// each a multiple of the request's alignment.
	Offsets []uint64
	// ArenaBytes is the highest end over all buffers, placed and new: the
	// arena size the plan needs.
	ArenaBytes uint64
	// LowerBound is the most bytes alive at any one step, placed and new
	// buffers together: no plan needs less than this.
	LowerBound uint64
}

// Plan gives every request an offset such that two requests alive at a
// common step never share a byte, keeping the arena as close to the lower
// bound as it can. The same input and options give the same plan whenever
// the search ends before any time limit or context does. Every layout is
// checked, as Validate does, before it is returned.
//
// It fails, naming the request, with an error wrapping ErrInvalidRequest for
// a request that cannot be planned, ErrOverlap for placed buffers found to
// share bytes, ErrOverflow when sizes or offsets do not fit in 64 bits,
// ErrInvalidOption for an option it cannot use, or ErrInternal for a
// defect of its own: a goroutine it started panicked, or its layout failed
// the check. With WithCapacity, a layout that does not fit is returned
// along with a *NoFitError (wrapping ErrNoFit): both results are then
// non-nil.
func Plan(reqs []Request, opts ...Option) (*Result, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	p, res, fitProven, err := unchecked(reqs, cfg)
	if err != nil {
		return nil, err
	}
	if err := p.check(reqs, cfg.placed, res); err != nil {
		return nil, err
	}
	if cfg.hasCap && res.ArenaBytes > cfg.capacity {
		return res, &NoFitError{Capacity: cfg.capacity, LowerBound: p.lb, BestArena: res.ArenaBytes,
			Proven: cfg.capacity < p.lb || fitProven}
	}
	return res, nil
}

// unchecked is Plan but for the check of the layout and the capacity: the
// problem, its layout, and whether that layout's arena is proven the least
// possible.
func unchecked(reqs []Request, cfg config) (*problem, *Result, bool, error) {
	p, err := newProblem(reqs, cfg.placed)
	if err != nil {
		return nil, nil, false, err
	}
	res := &Result{Offsets: make([]uint64, len(reqs)), ArenaBytes: p.fixedTop, LowerBound: p.lb}
	if len(reqs) == 0 {
		return p, res, false, nil
	}
	offs, top, proven, err := solve(p, cfg)
	if err != nil {
		return nil, nil, false, err
	}
	copy(res.Offsets, offs)
	res.ArenaBytes = max(top, p.fixedTop)
	return p, res, proven, nil
}

// solve plans the items: the greedy planners first, then, when they miss
// the target (the capacity, or else the lower bound) and the input suits
// it, the exact search from their best layout. It reports whether the
// layout's arena is proven the least possible. It fails with ErrOverflow
// when every layout overflowed 64 bits, and with ErrInternal when a
// goroutine it started panicked.
func solve(p *problem, cfg config) (offs []uint64, top uint64, proven bool, err error) {
	overflow := func() error {
		return failf(ErrOverflow, "no offsets below 2^64 for %d requests around placed buffers up to %s",
			len(p.items), humanize.IBytes(p.fixedTop))
	}
	sorted := byFirstStep(p.items)
	pairs := pairCount(p.items, sorted)
	busy, global := fixedBusy(p.items, p.fixed, p.fixedOff)
	var busyRanges int64
	for _, b := range busy {
		busyRanges += int64(len(b))
	}
	cost := decodeCost(len(p.items), pairs, busyRanges)
	if cost > sweepCost {
		offs, top, ok, err := largeInput(p.items, busy, global)
		switch {
		case err != nil:
			return nil, 0, false, err
		case !ok:
			return nil, 0, false, overflow()
		}
		return offs, top, top <= p.lb, nil
	}
	tries := cfg.tries
	if tries < 0 {
		tries = defaultTries(cost, len(p.items))
	}
	starts := greedyOrders
	if pairs == 0 {
		// New items that never meet each other take the same offsets in
		// any order.
		starts, tries = starts[:1], 0
	}
	conf := buildConflicts(p.items, sorted)
	d := newDecoder(p.items, conf, busy)
	goal := max(p.lb, p.fixedTop)
	if cfg.hasCap {
		goal = max(goal, cfg.capacity)
	}
	offs, top, ok := newSearcher(d, goal, tries).run(starts)
	if !ok {
		return nil, 0, false, overflow()
	}
	if top <= goal || len(p.fixed) > 0 || (cfg.hasCap && cfg.capacity < p.lb) || top > maxExactTop {
		return offs, top, top <= p.lb, nil
	}
	offs = slices.Clone(offs)
	top, proven, err = exactSearch(newLayout(p.items, conf), cfg, offs, top, p.lb)
	return offs, top, proven, err
}

// largeInput plans an input too large for the search with two fast passes
// run side by side, first fit by size class and the sweep, and keeps the
// first fit's layout unless the sweep's arena is smaller: the choice
// depends on the layouts alone, never on which pass finished first. A
// panic of the sweep's goroutine comes back as an error.
func largeInput(items []item, busy [][]interval, global []interval) ([]uint64, uint64, bool, error) {
	var (
		sOffs []uint64
		sTop  uint64
		sOK   bool
		swept = make(chan error, 1)
	)
	guarded(func() { sOffs, sTop, sOK = sweep(items, busy, global) }, swept)
	offs, top, ok := firstFitByClass(items, busy)
	if err := <-swept; err != nil {
		return nil, 0, false, err
	}
	if sOK && (!ok || sTop < top) {
		return sOffs, sTop, true, nil
	}
	return offs, top, ok, nil
}

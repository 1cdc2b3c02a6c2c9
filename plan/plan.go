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
// the search ends before any time limit or context does.
//
// It fails, naming the request, with an error wrapping ErrInvalidRequest for
// a request that cannot be planned, ErrOverflow when sizes or offsets do not
// fit in 64 bits, or ErrInvalidOption for an option it cannot use. With
// WithCapacity, a layout that does not fit is returned along with a
// *NoFitError (wrapping ErrNoFit): both results are then non-nil.
func Plan(reqs []Request, opts ...Option) (*Result, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	p, err := newProblem(reqs, cfg.placed)
	if err != nil {
		return nil, err
	}
	res := &Result{Offsets: make([]uint64, len(reqs)), ArenaBytes: p.fixedTop, LowerBound: p.lb}
	fitProven := false
	if len(reqs) > 0 {
		offs, top, proven, ok := solve(p, cfg)
		if !ok {
			return nil, failf(ErrOverflow, "no offsets below 2^64 for %d requests around placed buffers up to %s",
				len(reqs), humanize.IBytes(p.fixedTop))
		}
		copy(res.Offsets, offs)
		res.ArenaBytes = max(top, p.fixedTop)
		fitProven = proven
	}
	if cfg.hasCap && res.ArenaBytes > cfg.capacity {
		return res, &NoFitError{Capacity: cfg.capacity, LowerBound: p.lb, BestArena: res.ArenaBytes,
			Proven: cfg.capacity < p.lb || fitProven}
	}
	return res, nil
}

// solve plans the items: the greedy planners first, then, when they miss
// the target (the capacity, or else the lower bound) and the input suits
// it, the exact search from their best layout. It reports whether the
// layout's arena is proven the least possible, and false when every
// layout overflowed 64 bits.
func solve(p *problem, cfg config) (offs []uint64, top uint64, proven, ok bool) {
	sorted := byFirstStep(p.items)
	pairs := pairCount(p.items, sorted)
	busy, global := fixedBusy(p.items, p.fixed, p.fixedOff)
	var busyRanges int64
	for _, b := range busy {
		busyRanges += int64(len(b))
	}
	cost := decodeCost(len(p.items), pairs, busyRanges)
	if cost > sweepCost {
		offs, top, ok = largeInput(p.items, busy, global)
		return offs, top, top <= p.lb, ok
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
	offs, top, ok = newSearcher(d, goal, tries).run(starts)
	if !ok || top <= goal || len(p.fixed) > 0 || (cfg.hasCap && cfg.capacity < p.lb) || top > maxExactTop {
		return offs, top, top <= p.lb, ok
	}
	offs = slices.Clone(offs)
	top, proven = exactSearch(newLayout(p.items, conf), cfg, offs, top, p.lb)
	return offs, top, proven, true
}

// largeInput plans an input too large for the search with two fast passes
// run side by side, first fit by size class and the sweep, and keeps the
// first fit's layout unless the sweep's arena is smaller: the choice
// depends on the layouts alone, never on which pass finished first.
func largeInput(items []item, busy [][]interval, global []interval) ([]uint64, uint64, bool) {
	var (
		sOffs     []uint64
		sTop      uint64
		sOK       bool
		sweepDone = make(chan struct{})
	)
	go func() {
		defer close(sweepDone)
		sOffs, sTop, sOK = sweep(items, busy, global)
	}()
	offs, top, ok := firstFitByClass(items, busy)
	<-sweepDone
	if sOK && (!ok || sTop < top) {
		return sOffs, sTop, true
	}
	return offs, top, ok
}

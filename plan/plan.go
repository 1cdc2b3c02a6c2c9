package plan

import (
	"fmt"

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
// bound as it can. The same input always gives the same plan.
//
// It fails, naming the request, with an error wrapping ErrInvalidRequest for
// a request that cannot be planned, or ErrOverflow when sizes or offsets do
// not fit in 64 bits.
func Plan(reqs []Request, opts ...Option) (*Result, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	p, err := newProblem(reqs, cfg.placed)
	if err != nil {
		return nil, err
	}
	res := &Result{Offsets: make([]uint64, len(reqs)), ArenaBytes: p.fixedTop, LowerBound: p.lb}
	if len(reqs) == 0 {
		return res, nil
	}
	offs, top, ok := solve(p, cfg.tries)
	if !ok {
		return nil, fmt.Errorf("no offsets below 2^64 for %d requests around placed buffers up to %s: %w",
			len(reqs), humanize.IBytes(p.fixedTop), ErrOverflow)
	}
	copy(res.Offsets, offs)
	res.ArenaBytes = max(top, p.fixedTop)
	return res, nil
}

// solve picks the planner the input's size allows: the search for graphs
// whose conflicts fit in a list, one sweep for larger ones.
func solve(p *problem, tries int) ([]uint64, uint64, bool) {
	sorted := byFirstStep(p.items)
	pairs := pairCount(p.items, sorted)
	busy, global := fixedBusy(p.items, p.fixed, p.fixedOff)
	var busyRanges int64
	for _, b := range busy {
		busyRanges += int64(len(b))
	}
	cost := decodeCost(len(p.items), pairs, busyRanges)
	if cost > sweepCost {
		return sweep(p.items, busy, global)
	}
	if tries < 0 {
		tries = defaultTries(cost, len(p.items))
	}
	starts := greedyOrders
	if pairs == 0 {
		// New items that never meet each other take the same offsets in
		// any order.
		starts, tries = starts[:1], 0
	}
	d := newDecoder(p.items, buildConflicts(p.items, sorted), busy)
	return newSearcher(d, max(p.lb, p.fixedTop), tries).run(starts)
}

package plan

import (
	"cmp"
	"math"
	"slices"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
)

// item is a new request as the placer sees it.
type item struct {
	span
	align uint64
}

// interval is a byte range [lo, hi) in the arena.
type interval struct{ lo, hi uint64 }

// problem is a validated planning input: the new items to place and the
// placed buffers they must avoid. Its steps are at most maxStep (see
// boundSteps), so that the planner's arithmetic on them cannot overflow.
type problem struct {
	items []item
	// all holds the new items' spans, then the placed buffers'.
	all   []span
	fixed []span
	// fixedOff holds the placed buffers' offsets, parallel to fixed.
	fixedOff []uint64
	// fixedTop is the highest byte any placed buffer ends at.
	fixedTop uint64
	lb       uint64
}

func newProblem(reqs []Request, placed []Placed) (*problem, error) {
	// The lower bound needs new and placed spans in one slice; the placed
	// ones are kept as its tail rather than copied.
	all := make([]span, len(reqs)+len(placed))
	p := &problem{
		items:    make([]item, len(reqs)),
		all:      all,
		fixed:    all[len(reqs):],
		fixedOff: make([]uint64, len(placed)),
	}
	for i, r := range reqs {
		s, err := spanOf(r)
		if err != nil {
			return nil, within(err, "request %d (%s)", i, r)
		}
		all[i] = s
	}
	for i, pl := range placed {
		s, err := spanOf(pl.Request)
		if err != nil {
			return nil, within(err, "placed buffer %d (%s)", i, pl.Request)
		}
		if !align.Is(pl.Offset, pl.alignment()) {
			return nil, failf(ErrInvalidRequest, "placed buffer %d (%s): offset %d is not a multiple of %d",
				i, pl.Request, pl.Offset, pl.alignment())
		}
		end, ok := checked.Add(pl.Offset, s.size)
		if !ok {
			return nil, failf(ErrOverflow, "placed buffer %d (%s): offset %d + size", i, pl.Request, pl.Offset)
		}
		p.fixed[i] = s
		p.fixedOff[i] = pl.Offset
		p.fixedTop = max(p.fixedTop, end)
	}
	lb, err := peak(all)
	if err != nil {
		return nil, err
	}
	p.lb = lb
	boundSteps(all)
	for i, r := range reqs {
		p.items[i] = item{span: all[i], align: r.alignment()}
	}
	return p, nil
}

// maxStep is the largest step the planner works with: a step or a
// lifetime plus one fits in an int with room to spare.
const maxStep = math.MaxInt >> 2

// boundSteps replaces, in place, every step by its rank among the steps
// used, when some step is above maxStep (a request may say it lives until
// math.MaxInt). Two buffers meet when each starts no later than the other
// ends: a comparison of steps, which ranks preserve, so every layout is
// valid for both. Only the orders the search tries from, which weigh
// lifetimes, see the ranks instead of the steps.
func boundSteps(spans []span) {
	top := 0
	for _, s := range spans {
		top = max(top, s.last)
	}
	if top <= maxStep {
		return
	}
	steps := make([]int, 0, 2*len(spans))
	for _, s := range spans {
		steps = append(steps, s.first, s.last)
	}
	slices.Sort(steps)
	steps = slices.Compact(steps)
	rank := func(step int) int {
		k, _ := slices.BinarySearch(steps, step)
		return k
	}
	for i := range spans {
		spans[i].first, spans[i].last = rank(spans[i].first), rank(spans[i].last)
	}
}

// byFirstStep returns the item indices sorted by first step, ties by index
// so the result does not depend on the sort's stability.
func byFirstStep(items []item) []int32 {
	return sortedOrder(len(items), func(a, b int32) int { return cmp.Compare(items[a].first, items[b].first) })
}

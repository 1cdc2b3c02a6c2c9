package plan

import (
	"cmp"
	"math"

	"github.com/cudapool/cudapool/align"
)

// item is a new request as the placer sees it.
type item struct {
	span
	align uint64
}

// interval is a byte range [lo, hi) in the arena.
type interval struct{ lo, hi uint64 }

// problem is a validated planning input: the new items to place and the
// placed buffers they must avoid.
type problem struct {
	items []item
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
		fixed:    all[len(reqs):],
		fixedOff: make([]uint64, len(placed)),
	}
	for i, r := range reqs {
		s, err := spanOf(r)
		if err != nil {
			return nil, within(err, "request %d (%s)", i, r)
		}
		p.items[i] = item{span: s, align: r.alignment()}
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
		if pl.Offset > math.MaxUint64-s.size {
			return nil, failf(ErrOverflow, "placed buffer %d (%s): offset %d + size", i, pl.Request, pl.Offset)
		}
		p.fixed[i] = s
		p.fixedOff[i] = pl.Offset
		p.fixedTop = max(p.fixedTop, pl.Offset+s.size)
	}
	lb, err := peak(all)
	if err != nil {
		return nil, err
	}
	p.lb = lb
	return p, nil
}

// byFirstStep returns the item indices sorted by first step, ties by index
// so the result does not depend on the sort's stability.
func byFirstStep(items []item) []int32 {
	return sortedOrder(len(items), func(a, b int32) int { return cmp.Compare(items[a].first, items[b].first) })
}

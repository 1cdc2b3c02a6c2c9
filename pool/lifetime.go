package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/plan"
)

// request is the buffer as the planner sees it; a buffer without Live
// conflicts with every other.
func (b *Buffer) request() plan.Request {
	if !b.hasLife {
		return plan.Request{Size: b.size, First: wholeFirst, Last: wholeLast}
	}
	return plan.Request{Size: b.size, First: int(b.first), Last: int(b.last)}
}

func (a *arena) pendingHasLifetimes() bool {
	for _, b := range a.pending {
		if b.hasLife {
			return true
		}
	}
	return false
}

// planLifetimes places the pending buffers with the planner, around the
// placed ones, which never move: buffers never alive together share bytes.
func (a *arena) planLifetimes() (layout, error) {
	reqs := make([]plan.Request, len(a.pending))
	l := layout{}
	for i, b := range a.pending {
		reqs[i] = b.request()
		l.sizes += b.size
		l.aligned += alignedSize(b.size)
	}
	placed := make([]plan.Placed, len(a.placed))
	for i, b := range a.placed {
		placed[i] = plan.Placed{Request: b.request(), Offset: b.offset}
	}
	res, err := plan.Plan(reqs, plan.WithPlaced(placed))
	if errors.Is(err, plan.ErrOverflow) {
		return layout{}, a.exhausted(^uint64(0))
	}
	if err != nil {
		return layout{}, fmt.Errorf("pool: plan the %s arena: %w", a.kind, err)
	}
	if res.ArenaBytes > a.capacity {
		return layout{}, a.exhausted(res.ArenaBytes)
	}
	l.offsets, l.end = res.Offsets, res.ArenaBytes
	return l, nil
}

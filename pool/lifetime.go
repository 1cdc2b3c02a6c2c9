package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/internal/checked"
	"github.com/cudapool/cudapool/plan"
)

// request is the buffer as the planner sees it, its guard included; a buffer
// without Live conflicts with every other.
func (l *ledger) request(b *Buffer) plan.Request {
	size := b.size
	if l.guard > 0 {
		size = l.span(b.size)
	}
	if !b.hasLife {
		return plan.Request{Size: size, First: wholeFirst, Last: wholeLast}
	}
	return plan.Request{Size: size, First: int(b.first), Last: int(b.last)}
}

func (l *ledger) pendingHasLifetimes() bool {
	for _, b := range l.pending {
		if b.hasLife {
			return true
		}
	}
	return false
}

// planLifetimes places the pending buffers with the planner, around the
// placed ones, which never move: buffers never alive together share bytes.
func (l *ledger) planLifetimes() (layout, error) {
	reqs := make([]plan.Request, len(l.pending))
	var sizes, aligned checked.Total
	for i, b := range l.pending {
		reqs[i] = l.request(b)
		sizes.Add(b.size)
		aligned.Add(l.span(b.size))
	}
	out := layout{}
	var okSizes, okAligned bool
	out.sizes, okSizes = sizes.Uint64()
	out.aligned, okAligned = aligned.Uint64()
	if !okSizes || !okAligned {
		return layout{}, l.uncountable()
	}
	if err := l.countable(out.sizes, out.aligned); err != nil {
		return layout{}, err
	}
	placed := make([]plan.Placed, len(l.placed))
	for i, b := range l.placed {
		placed[i] = plan.Placed{Request: l.request(b), Offset: b.offset}
	}
	res, err := plan.Plan(reqs, plan.WithPlaced(placed))
	if errors.Is(err, plan.ErrOverflow) {
		return layout{}, l.exhausted(^uint64(0))
	}
	if err != nil {
		return layout{}, fmt.Errorf("pool: plan the %s arena: %w", l.kind, err)
	}
	if res.ArenaBytes > l.capacity {
		return layout{}, l.exhausted(res.ArenaBytes)
	}
	out.offsets, out.end = res.Offsets, res.ArenaBytes
	return out, nil
}

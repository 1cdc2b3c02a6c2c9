package plan

import (
	"context"
	"sync/atomic"
	"time"
)

// stopper ends a search at the caller's time limit or when its context is
// done. It is the only place where time enters the planner, and it can only
// cut a search short: what the search finds before it fires does not depend
// on it.
type stopper struct {
	ctx      context.Context
	deadline time.Time
	fired    atomic.Bool
}

func newStopper(ctx context.Context, limit time.Duration) *stopper {
	s := &stopper{ctx: ctx}
	if limit > 0 {
		s.deadline = time.Now().Add(limit)
	}
	return s
}

// done reports whether the search must end now. It is polled every
// thousand nodes or so, which keeps the clock out of the hot path.
func (s *stopper) done() bool {
	switch {
	case s.fired.Load():
		return true
	case s.ctx != nil && s.ctx.Err() != nil,
		!s.deadline.IsZero() && !time.Now().Before(s.deadline):
		s.fired.Store(true)
		return true
	}
	return false
}

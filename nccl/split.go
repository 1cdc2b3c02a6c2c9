package nccl

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// Split makes new communicators from c's ranks (ncclCommSplit): every
// rank of c calls it; ranks of the same color join one new communicator,
// ordered by key, then by their rank in c. A rank whose color is NoColor
// joins none and gets nil. The new communicator is non-blocking, or
// blocking with WithInlineLaunch, with NCCL's defaults for everything else
// (a config given to ncclCommSplit is the new communicator's whole config:
// it inherits nothing of c's). The split runs in c's mode: on NCCL's
// thread for a non-blocking c, in the call for a blocking one (see
// WithInlineLaunch). On a timeout both c and the new communicator are
// aborted.
func (c *Comm) Split(color, key int, opts ...CommOption) (*Comm, error) {
	cfg, err := commConfigure(opts)
	if err != nil {
		return nil, err
	}
	if color < NoColor || color > 1<<30 || key < -1<<31 || key > 1<<31-1 {
		return nil, fmt.Errorf("%w: split color %d, key %d", ErrInvalidOption, color, key)
	}
	unlock, err := lockAll([]*Comm{c})
	if err != nil {
		return nil, err
	}
	defer unlock()
	call := fmt.Sprintf("ncclCommSplit(color %d, key %d) on %s", color, key, c)
	kids, err := c.l.split([]*Comm{c}, func(int) int { return color }, func(int) int { return key }, cfg, call)
	if err != nil {
		return nil, err
	}
	return kids[0], nil
}

// split splits each of ps, whose locks the caller holds (one rank of a
// communicator, or one process's ranks of it, all of one mode), in one
// group, ps[i] with color(i) and key(i), into communicators of cfg. It
// returns the new communicator of each, nil for NoColor.
func (l *Library) split(ps []*Comm, color, key func(i int) int, cfg commConfig, call string) ([]*Comm, error) {
	named := func() string { return call }
	// NCCL writes each newcomm (a frame's Out) from its own thread when a
	// non-blocking split ends, done or failed, before the parent leaves
	// ncclInProgress or, on a timeout, before the parent's abort returns:
	// fs stays referenced, and is read only then.
	fs := make([]ncclabi.Frame, 0, len(ps)+2)
	if len(ps) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupStart})
	}
	first := len(fs)
	for i, p := range ps {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.CommSplit, Device: p.device, Comm: p.raw, Color: int32(color(i)), Key: int32(key(i)),
			Config: ncclabi.NewConfig(blockingConfig(cfg), ncclabi.ConfigUndef)})
	}
	if len(ps) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupEnd})
	}
	var err error
	if ps[0].inline {
		var n int
		var derr, late error
		if n, derr, late = l.doBlocking(fs, ps, cfg.timeout, named); late != nil {
			return nil, late
		}
		err = l.outcome(fs, n, derr, call, ps[0])
	} else {
		if err = l.do(fs, call, ps[0]); err != nil {
			return nil, err
		}
		err = l.wait(ps, named, cfg.timeout)
	}
	kids := make([]*Comm, len(ps))
	var made []*Comm
	for i, p := range ps {
		if raw := uintptr(atomic.LoadUint64(&fs[first+i].Out)); raw != 0 {
			kids[i] = l.newComm(raw, p.device, -1, 0, cfg)
			made = append(made, kids[i])
		}
	}
	if err == nil && !cfg.inline && len(made) > 0 {
		err = l.wait(made, named, cfg.timeout)
	}
	for _, k := range made {
		if err != nil {
			break
		}
		q := []ncclabi.Frame{{Call: ncclabi.CommUserRank, Comm: k.raw}, {Call: ncclabi.CommCount, Comm: k.raw}}
		err = l.do(q, "ncclCommUserRank", k)
		k.rank, k.size = int(int32(q[0].Out)), int(int32(q[1].Out))
	}
	if err != nil {
		// A split that failed still hands out its communicator, failed:
		// NCCL says to abort it.
		for _, k := range made {
			k.abort()
		}
		return nil, err
	}
	return kids, nil
}

// NoColor is NCCL_SPLIT_NOCOLOR: the rank joins no communicator of a Split.
const NoColor = ncclabi.SplitNoColor

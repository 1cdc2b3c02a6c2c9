package nccl

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// InitRank makes rank's communicator of nranks on device, the rank of one
// process or goroutine (ncclCommInitRankConfig, non-blocking): every rank
// calls it with the same id, nranks and options. It returns once every
// rank has joined, or with an error wrapping ErrTimeout when they have not
// within the bound, having aborted the communicator. With
// WithInlineLaunch, the ranks then split it into a blocking one.
func (l *Library) InitRank(device int, id UniqueID, nranks, rank int, opts ...CommOption) (*Comm, error) {
	cfg, err := commConfigure(opts)
	if err != nil {
		return nil, err
	}
	if nranks < 1 || nranks > 1<<30 || rank < 0 || rank >= nranks {
		return nil, fmt.Errorf("%w: rank %d of %d", ErrInvalidOption, rank, nranks)
	}
	fs := []ncclabi.Frame{{Call: ncclabi.CommInitRankConfig, Device: device, NRanks: int32(nranks), Rank: int32(rank),
		ID: ncclabi.UniqueID(id), Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)}}
	call := fmt.Sprintf("ncclCommInitRankConfig(rank %d of %d) on device %d", rank, nranks, device)
	comms, err := l.start(fs, call, cfg)
	if err != nil {
		return nil, err
	}
	return comms[0], nil
}

// blockingConfig is ncclConfig_t's blocking for cfg.
func blockingConfig(cfg commConfig) int32 {
	if cfg.inline {
		return 1
	}
	return 0
}

// InitAll makes one communicator on each of devices, ranks in their order,
// in this process (as ncclCommInitAll, through a group of non-blocking
// inits). It returns once all are ready, or with an error wrapping
// ErrTimeout, having aborted them, when they are not within the bound.
// With WithInlineLaunch, it then splits them into blocking ones, in one
// group.
func (l *Library) InitAll(devices []int, opts ...CommOption) ([]*Comm, error) {
	cfg, err := commConfigure(opts)
	if err != nil {
		return nil, err
	}
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: no devices", ErrInvalidOption)
	}
	id, err := l.UniqueID()
	if err != nil {
		return nil, err
	}
	fs := []ncclabi.Frame{{Call: ncclabi.GroupStart}}
	for r, d := range devices {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.CommInitRankConfig, Device: d, NRanks: int32(len(devices)), Rank: int32(r),
			ID: ncclabi.UniqueID(id), Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)})
	}
	fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupEnd})
	return l.start(fs, fmt.Sprintf("ncclCommInitAll(devices %v)", devices), cfg)
}

// start runs a batch of non-blocking inits and waits for the communicators
// it made; with cfg.inline, it splits them into blocking ones and destroys
// them.
func (l *Library) start(fs []ncclabi.Frame, call string, cfg commConfig) ([]*Comm, error) {
	parent := cfg
	parent.inline = false
	n, derr := l.be.Do(fs)
	var comms []*Comm
	for i := range fs[:n] {
		f := &fs[i]
		if f.Call == ncclabi.CommInitRankConfig && f.Out != 0 {
			comms = append(comms, l.newComm(uintptr(f.Out), f.Device, int(f.Rank), int(f.NRanks), parent))
		}
	}
	var err error
	switch {
	case derr != nil:
		err = fmt.Errorf("nccl: %s: selecting device %d: %w", call, fs[n].Device, derr)
	case n > 0 && fs[n-1].Result != ncclabi.Success && fs[n-1].Result != ncclabi.InProgress:
		err = l.fail(fs[n-1].Result, call, nil)
	case len(comms) != countCalls(fs, ncclabi.CommInitRankConfig):
		err = fmt.Errorf("nccl: %s: NCCL returned no communicator", call)
	default:
		err = l.wait(comms, func() string { return call }, cfg.timeout)
	}
	if err != nil {
		for _, c := range comms {
			c.abort()
		}
		return nil, err
	}
	if cfg.inline {
		return l.inlineOf(comms, cfg, call)
	}
	return comms, nil
}

// inlineOf splits one process's ranks of a new non-blocking communicator,
// ps, into blocking ones of the same ranks (color 0, key the rank), then
// destroys ps: why a blocking communicator is a split is in blocking.go.
func (l *Library) inlineOf(ps []*Comm, cfg commConfig, call string) ([]*Comm, error) {
	unlock, err := lockAll(ps)
	if err != nil {
		return nil, err
	}
	kids, err := l.split(ps, func(int) int { return 0 }, func(i int) int { return ps[i].rank }, cfg, call+", split into blocking communicators")
	unlock()
	for _, p := range ps {
		if e := p.Destroy(); e != nil && err == nil {
			err = fmt.Errorf("nccl: %s: destroying the non-blocking communicator split: %w", call, e)
		}
	}
	if err != nil {
		for _, k := range kids {
			if k != nil {
				k.abort()
			}
		}
		return nil, err
	}
	return kids, nil
}

func countCalls(fs []ncclabi.Frame, c ncclabi.Call) int {
	n := 0
	for _, f := range fs {
		if f.Call == c {
			n++
		}
	}
	return n
}

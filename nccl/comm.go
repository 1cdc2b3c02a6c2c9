package nccl

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/internal/ncclabi"
	"github.com/cudapool/cudapool/internal/opt"
)

// DefaultTimeout is how long a communicator's call waits for NCCL (for the
// other ranks to join an init or post their part of an operation) before it
// aborts the communicators it waits for and returns ErrTimeout, unless
// WithTimeout says otherwise.
const DefaultTimeout = 10 * time.Second

// CommOption configures a communicator made by InitRank, InitAll or Split.
// Options are values made by the With functions of this package; a nil one
// is refused with an error wrapping ErrInvalidOption.
type CommOption interface {
	applyComm(*commConfig)
}

type commOption func(*commConfig)

func (o commOption) applyComm(c *commConfig) { o(c) }

type commConfig struct {
	timeout time.Duration
}

// WithTimeout bounds every call on the communicator, its init included, to
// d: a call still in progress after d aborts the communicators it waits for
// and returns an error wrapping ErrTimeout. d must be positive.
func WithTimeout(d time.Duration) CommOption {
	return commOption(func(c *commConfig) { c.timeout = d })
}

func commConfigure(opts []CommOption) (commConfig, error) {
	c := commConfig{timeout: DefaultTimeout}
	err := opt.Apply(opts, ErrInvalidOption, func(o CommOption) error {
		o.applyComm(&c)
		if c.timeout <= 0 {
			return fmt.Errorf("%w: timeout %v: want a positive duration", ErrInvalidOption, c.timeout)
		}
		return nil
	})
	return c, err
}

// Comm is one rank's communicator (ncclComm_t), on one device. It is
// non-blocking (NCCL's blocking = 0): no call waits on NCCL without a bound,
// WithTimeout's or DefaultTimeout.
//
// A Comm is safe for concurrent use, but its calls are serialised, as NCCL
// requires: give each goroutine that runs collectives at the same time a
// communicator of its own.
type Comm struct {
	l       *Library
	id      uint64 // orders the locks a group takes
	device  int
	rank    int
	size    int
	timeout time.Duration

	mu  sync.Mutex // guards raw and orders the calls on it
	raw uintptr    // the ncclComm_t; 0 once destroyed or aborted
}

var commIDs atomic.Uint64

func (l *Library) newComm(raw uintptr, device, rank, size int, cfg commConfig) *Comm {
	return &Comm{l: l, id: commIDs.Add(1), raw: raw, device: device, rank: rank, size: size, timeout: cfg.timeout}
}

// Device is the device the communicator works on.
func (c *Comm) Device() int { return c.device }

// Rank is the communicator's rank, 0 to Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks of the communicator.
func (c *Comm) Size() int { return c.size }

// String names the rank and device, for messages.
func (c *Comm) String() string {
	return fmt.Sprintf("rank %d of %d on device %d", c.rank, c.size, c.device)
}

// InitRank makes rank's communicator of nranks on device, the rank of one
// process or goroutine (ncclCommInitRankConfig, non-blocking): every rank
// calls it with the same id and nranks. It returns once every rank has
// joined, or with an error wrapping ErrTimeout when they have not within
// the bound, having aborted the communicator.
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

// InitAll makes one communicator on each of devices, ranks in their order,
// in this process (as ncclCommInitAll, through a group of non-blocking
// inits). It returns once all are ready, or with an error wrapping
// ErrTimeout, having aborted them, when they are not within the bound.
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

// start runs a batch of inits and waits for the communicators it made.
func (l *Library) start(fs []ncclabi.Frame, call string, cfg commConfig) ([]*Comm, error) {
	n, derr := l.be.Do(fs)
	var comms []*Comm
	for i := range fs[:n] {
		f := &fs[i]
		if f.Call == ncclabi.CommInitRankConfig && f.Out != 0 {
			comms = append(comms, l.newComm(uintptr(f.Out), f.Device, int(f.Rank), int(f.NRanks), cfg))
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
	return comms, nil
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

// wait polls the communicators' state (ncclCommGetAsyncError) until none is
// in progress, and returns the first error. Past timeout it aborts those
// still in progress and returns an error wrapping ErrTimeout. The caller
// holds their locks, or they are not shared yet. call names what is waited
// for, asked only for an error.
//
// A poll asks every communicator in one batch (one locked thread, no
// allocation): an eager collective's wait polls many times.
func (l *Library) wait(comms []*Comm, call func() string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pace := newPacer()
	fs := make([]ncclabi.Frame, len(comms))
	busy := make([]*Comm, 0, len(comms))
	for {
		for i, c := range comms {
			fs[i] = ncclabi.Frame{Call: ncclabi.CommGetAsyncError, Comm: c.raw}
		}
		n, derr := l.be.Do(fs)
		if derr != nil {
			return fmt.Errorf("nccl: %s: ncclCommGetAsyncError: %w", call(), derr)
		}
		if r := fs[n-1].Result; !ok(r) {
			return l.fail(r, call()+": ncclCommGetAsyncError", comms[n-1])
		}
		busy = busy[:0]
		for i, c := range comms {
			switch r := ncclabi.Result(int32(fs[i].Out)); r {
			case ncclabi.Success:
			case ncclabi.InProgress:
				busy = append(busy, c)
			default:
				return fmt.Errorf("%w (%s)", l.fail(r, call(), c), c)
			}
		}
		if len(busy) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var who []string
			for _, c := range busy {
				who = append(who, c.String())
			}
			abortLocked(busy)
			return fmt.Errorf("%w: %s still in progress after %v on %v; aborted", ErrTimeout, call(), timeout, who)
		}
		pace.pause()
	}
}

// lock locks the communicators in a fixed order, so that groups over the
// same communicators never deadlock, and refuses a closed one.
func lockAll(comms []*Comm) (unlock func(), err error) {
	sorted := slices.Clone(comms)
	slices.SortFunc(sorted, func(a, b *Comm) int { return int(a.id) - int(b.id) })
	sorted = slices.CompactFunc(sorted, func(a, b *Comm) bool { return a == b })
	for i, c := range sorted {
		c.mu.Lock()
		if c.raw == 0 {
			for _, d := range sorted[:i+1] {
				d.mu.Unlock()
			}
			return nil, fmt.Errorf("%w: %s", ErrClosed, c)
		}
	}
	return func() {
		for _, c := range sorted {
			c.mu.Unlock()
		}
	}, nil
}

// Split makes new communicators from c's ranks (ncclCommSplit,
// non-blocking): every rank of c calls it; ranks of the same color join one
// new communicator, ordered by key, then by their rank in c. A rank whose
// color is NoColor joins none and gets nil. The new communicator is
// non-blocking, with NCCL's defaults for everything else (a config given
// to ncclCommSplit is the new communicator's whole config: it inherits
// nothing of c's). On a timeout both c and the new communicator are
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
	// NCCL writes newcomm (fs[0].Out) from its own thread when the split
	// ends, done or failed, before c leaves ncclInProgress or, on a
	// timeout, before c's abort returns: fs stays referenced, and is read
	// only then.
	fs := []ncclabi.Frame{{Call: ncclabi.CommSplit, Device: c.device, Comm: c.raw, Color: int32(color), Key: int32(key),
		Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)}}
	if err := c.l.do(fs, call, c); err != nil {
		return nil, err
	}
	err = c.l.wait([]*Comm{c}, func() string { return call }, cfg.timeout)
	raw := uintptr(atomic.LoadUint64(&fs[0].Out))
	if raw == 0 {
		return nil, err
	}
	child := c.l.newComm(raw, c.device, -1, 0, cfg)
	if err == nil {
		err = c.l.wait([]*Comm{child}, func() string { return call }, cfg.timeout)
	}
	if err == nil {
		q := []ncclabi.Frame{{Call: ncclabi.CommUserRank, Comm: child.raw}, {Call: ncclabi.CommCount, Comm: child.raw}}
		err = c.l.do(q, "ncclCommUserRank", child)
		child.rank, child.size = int(int32(q[0].Out)), int(int32(q[1].Out))
	}
	if err != nil {
		// A split that failed still hands out its communicator, failed:
		// NCCL says to abort it.
		child.abort()
		return nil, err
	}
	return child, nil
}

// NoColor is NCCL_SPLIT_NOCOLOR: the rank joins no communicator of a Split.
const NoColor = ncclabi.SplitNoColor

// AsyncError is the communicator's asynchronous error
// (ncclCommGetAsyncError): nil while it is well, or busy with an operation,
// an *Error once NCCL found one (a peer gone, a network failure), after
// which only Abort is of use.
func (c *Comm) AsyncError() error {
	unlock, err := lockAll([]*Comm{c})
	if err != nil {
		return err
	}
	defer unlock()
	fs := []ncclabi.Frame{{Call: ncclabi.CommGetAsyncError, Comm: c.raw}}
	if err := c.l.do(fs, "ncclCommGetAsyncError on "+c.String(), c); err != nil {
		return err
	}
	if r := ncclabi.Result(int32(fs[0].Out)); r != ncclabi.Success && r != ncclabi.InProgress {
		return c.l.fail(r, "ncclCommGetAsyncError on "+c.String(), c)
	}
	return nil
}

// Destroy waits for the communicator's operations to finish
// (ncclCommFinalize, within the bound) and frees it (ncclCommDestroy),
// giving its device memory back. Past the bound it aborts instead and
// returns an error wrapping ErrTimeout. A communicator that failed (its
// AsyncError is not nil) is aborted, as NCCL requires. It is idempotent: a communicator
// destroyed or aborted before returns nil.
func (c *Comm) Destroy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == 0 {
		return nil
	}
	// A communicator that failed cannot finalize: NCCL says to abort it.
	// Its error was the failed call's.
	q := []ncclabi.Frame{{Call: ncclabi.CommGetAsyncError, Comm: c.raw}}
	if err := c.l.do(q, "ncclCommGetAsyncError on "+c.String(), c); err != nil || !ok(ncclabi.Result(int32(q[0].Out))) {
		return c.abortLocked()
	}
	fs := []ncclabi.Frame{{Call: ncclabi.CommFinalize, Device: c.device, Comm: c.raw}}
	err := c.l.do(fs, "ncclCommFinalize on "+c.String(), c)
	if err == nil {
		err = c.l.wait([]*Comm{c}, func() string { return "ncclCommFinalize on " + c.String() }, c.timeout)
	}
	if c.raw == 0 { // the wait aborted it
		return err
	}
	if err != nil {
		c.abortLocked()
		return err
	}
	fs = []ncclabi.Frame{{Call: ncclabi.CommDestroy, Device: c.device, Comm: c.raw}}
	err = c.l.do(fs, "ncclCommDestroy on "+c.String(), c)
	if err != nil {
		c.abortLocked()
		return err
	}
	c.raw = 0
	return nil
}

// Abort frees the communicator at once (ncclCommAbort), stopping its
// operations in flight: what a rank does when a peer is gone. The other
// ranks' operations with it stay in progress until they abort too. It is
// idempotent.
func (c *Comm) Abort() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.abortLocked()
}

// abortLocked aborts comms, whose locks the caller holds, at once: each
// waits AbortWait at most, so all of them together wait no longer.
func abortLocked(comms []*Comm) {
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.abort()
		}()
	}
	wg.Wait()
}

// abort aborts a communicator whose lock the caller holds, or that is not
// shared yet.
func (c *Comm) abort() { _ = c.abortLocked() }

// AbortWait bounds how long Abort, and a call that aborts past its bound,
// waits for ncclCommAbort. NCCL's abort may wait for the ranks it shares
// memory with to abort too (it joins its proxy thread, which talks to
// them): with a peer killed it can wait for ever (NCCL 2.16 and later).
// Past AbortWait the abort goes on in the background and the caller gets
// an error wrapping ErrTimeout; the communicator is closed either way, its
// kernels told to stop before NCCL waits for anything.
const AbortWait = 2 * time.Second

func (c *Comm) abortLocked() error {
	if c.raw == 0 {
		return nil
	}
	call := "ncclCommAbort on " + c.String()
	fs := []ncclabi.Frame{{Call: ncclabi.CommAbort, Device: c.device, Comm: c.raw}}
	c.raw = 0
	done := make(chan error, 1)
	// Its error names no communicator: c.raw is no longer this one's.
	go func() { done <- c.l.do(fs, call, nil) }()
	t := time.NewTimer(AbortWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w: %s had not returned after %v (NCCL waits for its peers to abort too; one gone or hung keeps it waiting): left running in the background, the communicator closed", ErrTimeout, call, AbortWait)
	}
}

// ok reports whether r is success or in progress: not an error.
func ok(r ncclabi.Result) bool { return r == ncclabi.Success || r == ncclabi.InProgress }

package nccl

import (
	"cmp"
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
	inline  bool
}

// WithTimeout bounds every call on the communicator, its init included, to
// d: a call still in progress after d aborts the communicators it waits for
// and returns an error wrapping ErrTimeout. d must be positive.
func WithTimeout(d time.Duration) CommOption {
	return commOption(func(c *commConfig) { c.timeout = d })
}

// WithInlineLaunch makes a communicator whose operations NCCL launches on
// the calling thread, as it does a blocking communicator's (NCCL's config
// blocking = 1), where a non-blocking one's group end starts a thread of
// NCCL's to launch them and the caller polls for its end: on 2×H200 (NCCL
// 2.28.9) an eager all-reduce of 1 MiB took 25 µs a call from C with
// blocking communicators and 150 µs with non-blocking ones. Graph-captured
// operations cost the same either way.
//
// It is made non-blocking (InitRank, InitAll: every init waits for its
// peers, and a timeout aborts it, as for any communicator), then split
// into the blocking one (ncclCommSplit with config blocking = 1, which
// runs in the parent's non-blocking mode and is aborted with it), and the
// parent destroyed: making one takes a split's time and memory more than
// a plain init, and holds what a split's communicator holds (see Memory).
// Split with it makes a blocking communicator of any parent.
//
// Its calls never hang the caller either, but by another mechanism: NCCL
// cannot stop a blocking call (ncclCommAbort must not run while a call is
// in progress on the communicator), so the binding makes each one that may
// wait (an operation or group, a split, a registration, Destroy) on a
// goroutine of its own, and the caller waits for it within the bound.
// Past the bound the caller gets ErrTimeout and the communicator is
// closed; the goroutine aborts it once NCCL returns, which it does when
// the wait ends (a peer gone ends it with an error). Such a wait happens
// where NCCL waits for peers on the host: connecting them, at a
// collective's first use of an algorithm or a first transfer to a peer
// (run one of each kind of the program's operations first, on every
// rank), or a launch behind a queue full of kernels waiting for a dead
// peer (wait for the streams within a bound: Library.Wait). A call left
// running keeps its OS thread and the communicator's memory for as long
// as it waits. Every rank must make its communicator with the same
// options, and a Group takes communicators of one kind only.
func WithInlineLaunch() CommOption {
	return commOption(func(c *commConfig) { c.inline = true })
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
// non-blocking (NCCL's blocking = 0), or blocking (WithInlineLaunch): no
// call waits on NCCL without a bound, WithTimeout's or DefaultTimeout.
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
	inline  bool // blocking (WithInlineLaunch)

	mu  sync.Mutex // guards raw and left, and orders the calls on it
	raw uintptr    // the ncclComm_t; 0 once destroyed or aborted
	// left is closed once a blocking call given up on (see doBlocking)
	// has returned and the communicator is aborted; nil with none.
	left chan struct{}
}

var commIDs atomic.Uint64

func (l *Library) newComm(raw uintptr, device, rank, size int, cfg commConfig) *Comm {
	return &Comm{l: l, id: commIDs.Add(1), raw: raw, device: device, rank: rank, size: size, timeout: cfg.timeout, inline: cfg.inline}
}

// InlineLaunch reports whether the communicator is blocking, its
// operations launched on the calling thread (WithInlineLaunch).
func (c *Comm) InlineLaunch() bool { return c.inline }

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

// wait polls the communicators' state (ncclCommGetAsyncError) until none is
// in progress, and returns the first error. Past timeout it aborts those
// still in progress and returns an error wrapping ErrTimeout. The caller
// holds their locks, or they are not shared yet. call names what is waited
// for, asked only for an error.
//
// A poll asks every communicator in one batch (one locked thread, frames
// kept from a pool): an eager collective's wait polls many times.
func (l *Library) wait(comms []*Comm, call func() string, timeout time.Duration) error {
	w := polls.Get().(*poll)
	err := l.waitWith(w, comms, call, timeout)
	w.busy = w.busy[:0]
	polls.Put(w)
	return err
}

// poll is a wait's frames and the communicators still in progress.
type poll struct {
	fs   []ncclabi.Frame
	busy []*Comm
}

var polls = sync.Pool{New: func() any { return new(poll) }}

func (l *Library) waitWith(w *poll, comms []*Comm, call func() string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pace := newPacer()
	w.fs = slices.Grow(w.fs[:0], len(comms))[:len(comms)]
	fs := w.fs
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
		w.busy = w.busy[:0]
		for i, c := range comms {
			switch r := ncclabi.Result(int32(fs[i].Out)); r {
			case ncclabi.Success:
			case ncclabi.InProgress:
				w.busy = append(w.busy, c)
			default:
				return fmt.Errorf("%w (%s)", l.fail(r, call(), c), c)
			}
		}
		if len(w.busy) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			who := commNames(w.busy)
			abortLocked(w.busy)
			return fmt.Errorf("%w: %s still in progress after %v on [%s]; aborted", ErrTimeout, call(), timeout, who)
		}
		pace.pause()
	}
}

// lockAll locks comms (see lockSorted) and returns what unlocks them.
func lockAll(comms []*Comm) (unlock func(), err error) {
	sorted := sortUnique(nil, comms)
	if err := lockSorted(sorted); err != nil {
		return nil, err
	}
	return func() { unlockSorted(sorted) }, nil
}

// sortUnique appends comms to dst[:0] in the order of their locks, once
// each.
func sortUnique(dst, comms []*Comm) []*Comm {
	dst = append(dst[:0], comms...)
	slices.SortFunc(dst, func(a, b *Comm) int { return cmp.Compare(a.id, b.id) })
	return slices.Compact(dst)
}

// lockSorted locks the communicators of sortUnique in its order, so that
// groups over the same communicators never deadlock, and refuses a closed
// one, leaving none locked.
func lockSorted(sorted []*Comm) error {
	for i, c := range sorted {
		c.mu.Lock()
		if c.raw == 0 {
			unlockSorted(sorted[:i+1])
			return fmt.Errorf("%w: %s", ErrClosed, c)
		}
	}
	return nil
}

func unlockSorted(sorted []*Comm) {
	for _, c := range sorted {
		c.mu.Unlock()
	}
}

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
// giving its device memory back. Past the bound it aborts a non-blocking
// communicator and returns an error wrapping ErrTimeout; a blocking one's
// finalize, which waits for its kernels, is left running as any blocking
// call past its bound is (see WithInlineLaunch): wait for its streams
// first (Library.Wait, which aborts it past its bound). A communicator
// that failed (its AsyncError is not nil) is aborted, as NCCL requires. It
// is idempotent: a communicator destroyed or aborted before returns nil.
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
	if c.inline {
		return c.destroyBlocking()
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

// destroyBlocking finalizes and destroys a blocking communicator, whose
// lock the caller holds, in one call of doBlocking: NCCL returns from
// ncclCommFinalize once its work is done.
func (c *Comm) destroyBlocking() error {
	fs := []ncclabi.Frame{{Call: ncclabi.CommFinalize, Device: c.device, Comm: c.raw}, {Call: ncclabi.CommDestroy, Device: c.device, Comm: c.raw}}
	err := c.do(fs, "ncclCommFinalize, ncclCommDestroy on "+c.String())
	switch {
	case c.raw == 0: // given up on, left to NCCL
	case err != nil:
		c.abort()
	default:
		c.raw = 0
	}
	return err
}

// Abort frees the communicator at once (ncclCommAbort), stopping its
// operations in flight: what a rank does when a peer is gone. The other
// ranks' operations with it stay in progress until they abort too. It is
// idempotent.
//
// On a blocking communicator closed by a call left running past its bound
// (see WithInlineLaunch), it waits AbortWait at most for that call to
// return and the communicator's abort to end, returning an error wrapping
// ErrTimeout if they have not.
func (c *Comm) Abort() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == 0 && c.left != nil {
		t := time.NewTimer(AbortWait)
		defer t.Stop()
		select {
		case <-c.left:
			return nil
		case <-t.C:
			return fmt.Errorf("%w: the blocking call left running on %s had not returned after %v more: the communicator is aborted once it does", ErrTimeout, c, AbortWait)
		}
	}
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

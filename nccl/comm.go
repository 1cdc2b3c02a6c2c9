package nccl

import (
	"fmt"
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

// String names the communicator, its rank and device, for messages, e.g.
// "comm 3: rank 0 of 2 on device 0". Communicators are numbered from 1 in
// the order the process made them, a rank each, so the ranks of one
// InitAll have consecutive numbers, and a group that mixes communicators
// of different cliques shows it in its messages.
func (c *Comm) String() string {
	return fmt.Sprintf("comm %d: rank %d of %d on device %d", c.id, c.rank, c.size, c.device)
}

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

// ok reports whether r is success or in progress: not an error.
func ok(r ncclabi.Result) bool { return r == ncclabi.Success || r == ncclabi.InProgress }

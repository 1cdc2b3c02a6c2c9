package nccl

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// How a wait paces its polls of NCCL (ncclCommGetAsyncError). A
// collective's non-blocking group end is done when NCCL's thread for the
// group (one started at every group end) has launched its kernels: an eager
// all-reduce of 1 MiB took 15 µs a call from C on 2×H200 with blocking
// communicators, and 150 to 400 µs through the binding on 2 and 4 H200s
// (issue 33). A sleep of under a millisecond may last a millisecond (Go's
// timers wake from the netpoller, at a millisecond's resolution on Linux):
// sleeping between the first polls cost every call 0.9 ms. So a wait polls
// back to back, yielding to other goroutines (the fake's ranks, or other
// ranks of this process) for spinFor, longer than those calls took, and
// only then sleeps, doubling from firstSleep up to maxSleep, which bounds
// how far past its deadline a wait ends. Waits that last longer (an init, a peer late to its first collective) spend a
// millisecond of a core first.
const (
	spinFor    = time.Millisecond
	firstSleep = 50 * time.Microsecond
	maxSleep   = time.Millisecond
)

// pacer paces one wait's polls.
type pacer struct {
	start time.Time
	sleep time.Duration
}

func newPacer() pacer { return pacer{start: time.Now()} }

// pause waits before the next poll: a yield while the wait is young, a
// sleep, growing, after.
func (p *pacer) pause() {
	if p.sleep == 0 {
		if time.Since(p.start) < spinFor {
			runtime.Gosched()
			return
		}
		p.sleep = firstSleep
	}
	time.Sleep(p.sleep)
	p.sleep = min(2*p.sleep, maxSleep)
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

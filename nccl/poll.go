package nccl

import (
	"runtime"
	"time"
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

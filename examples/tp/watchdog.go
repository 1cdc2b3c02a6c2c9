package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/nccl"
)

// What a tensor-parallel request is doing, for the watchdog's message.
const (
	phaseIdle = iota
	phaseLaunch
	phaseWait
	phaseRead
)

var phaseNames = [...]string{phaseIdle: "ending", phaseLaunch: "launching its work", phaseWait: "waiting for its devices", phaseRead: "reading its output"}

// watchdog bounds every tensor-parallel request of a backend by its
// timeout, whatever call the request is in: a request's own wait
// (nccl's Library.Wait) is bounded, but a call into CUDA or NCCL
// (cudaGraphLaunch, cudaStreamQuery, ncclCommGetAsyncError, an eager
// group) may itself never return once a peer died with its part of a
// collective unposted: on 2×H200 a rank whose peer was killed mid-soak
// printed nothing for 88 s, its bounded wait never reached. So a goroutine
// of its own, which no such call holds, watches when each group's request
// began. One still in progress past the timeout raises the abort signal
// with an error wrapping nccl.ErrTimeout (tp then exits within
// cleanupWait) and aborts the group's communicators in the background,
// which stops their kernels; so does every other group's request past its
// bound after it.
type watchdog struct {
	timeout time.Duration
	aborted *abortSignal
	abort   func(group int) // aborts the group's communicators; may block
	epoch   time.Time
	groups  []inFlight
	stop    chan struct{}
	stopped chan struct{}
}

// inFlight is one group's request in progress.
type inFlight struct {
	since atomic.Int64 // nanoseconds from the epoch at its start, plus 1; 0 when idle
	phase atomic.Int32
}

// newWatchdog watches groups groups until stop.
func newWatchdog(groups int, timeout time.Duration, aborted *abortSignal, abort func(group int)) *watchdog {
	w := &watchdog{timeout: timeout, aborted: aborted, abort: abort, epoch: time.Now(),
		groups: make([]inFlight, groups), stop: make(chan struct{}), stopped: make(chan struct{})}
	go w.run()
	return w
}

func (w *watchdog) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// begin notes that group's request started, launching its work.
func (w *watchdog) begin(group int) {
	w.groups[group].phase.Store(phaseLaunch)
	w.groups[group].since.Store(w.now())
}

// at notes what group's request is doing now.
func (w *watchdog) at(group int, phase int32) { w.groups[group].phase.Store(phase) }

// end notes that group's request is over.
func (w *watchdog) end(group int) {
	w.groups[group].since.Store(0)
	w.groups[group].phase.Store(phaseIdle)
}

// run wakes at the earliest deadline of the requests in progress, or a
// timeout after its last look: a request that begins meanwhile ends no
// earlier than that.
func (w *watchdog) run() {
	defer close(w.stopped)
	t := time.NewTimer(w.timeout)
	defer t.Stop()
	fired := make([]bool, len(w.groups))
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := w.now()
		next := now + int64(w.timeout)
		for k := range w.groups {
			since := w.groups[k].since.Load()
			if since == 0 || fired[k] {
				continue
			}
			if due := since + int64(w.timeout); due > now {
				next = min(next, due)
				continue
			}
			phase := phaseNames[w.groups[k].phase.Load()]
			w.aborted.raise(fmt.Errorf("%w: the request of group %d still %s after %v (a peer gone, or hung?); the group's communicators aborted",
				nccl.ErrTimeout, k, phase, w.timeout))
			fired[k] = true
			go w.abort(k)
		}
		t.Reset(time.Duration(next - now))
	}
}

// close stops the watchdog.
func (w *watchdog) close() {
	close(w.stop)
	<-w.stopped
}

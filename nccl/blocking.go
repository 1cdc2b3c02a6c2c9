package nccl

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// A blocking communicator's calls (WithInlineLaunch) return when NCCL is
// done with them, and NCCL documents that such a call may wait for ever
// (its Fault Tolerance section: a thread stuck inside a call on a blocking
// communicator). The places, in NCCL 2.28.9: a collective's first use of
// an algorithm, or a first transfer to a peer, connects the peers in the
// call (groupLaunch, group.cc, through ncclCollPreconnect and
// ncclTransportP2pSetup), and a launch waits when its stream's queue is
// full. Nor can anything stop one: ncclCommAbort must not run while
// another thread is in a call on the communicator (the same section), and
// in 2.28.9 it frees the communicator under that call (commReclaim,
// init.cc:2309, then commCleanup and commFree). So the binding never
// makes such a call on its caller's goroutine: a worker goroutine makes
// it, and the caller waits for the worker within the communicator's
// bound. Past the bound the caller gets ErrTimeout and the communicators
// are closed; the worker aborts them once NCCL returns, as it then may.
//
// A blocking communicator is never made by a blocking init: its
// ncclCommInitRankConfig waits for every rank in the call, and though
// *newcomm is set before it does (ncclCommInitRankDev, init.cc:2001), an
// abort of it meanwhile frees nothing until the init has set intraComm0
// (init.cc:964), and the comm under the init after: it is a split of a
// non-blocking communicator instead. The split runs in the parent's mode
// (ncclAsyncLaunch with the parent, init.cc:2626), on NCCL's thread, and
// the parent's abort stops it (its childAbortFlag is the new
// communicator's abort flag until the new one's init ends,
// init.cc:2594).

// The states of a blockingCall.
const (
	callRunning   int32 = iota
	callDone            // NCCL returned in time: the caller has the results
	callAbandoned       // the caller gave up: the goroutine aborts what it left
)

// blockingCall is one batch of calls on blocking communicators, made by a
// worker goroutine while its caller waits.
type blockingCall struct {
	l  *Library
	fs []ncclabi.Frame
	// n and derr are Do's results, written before state leaves
	// callRunning for callDone.
	n     int
	derr  error
	state atomic.Int32
	// done is signalled by the worker at the end of the call and by the
	// watcher past the deadline: twice at most.
	done     chan struct{}
	deadline time.Time
	// left aborts the communicators the caller closed when it gave up,
	// for the worker to make, which closes aborted after: both written
	// before state becomes callAbandoned.
	left    []ncclabi.Frame
	aborted chan struct{}
	// prev and next link the calls in flight, and expired says the
	// watcher has signalled this one; all three blockingCalls.mu's.
	prev, next *blockingCall
	expired    bool
}

// calls are blockingCalls with no caller, each with its done channel:
// one whose caller got nothing but the worker's signal is reused.
var calls = sync.Pool{New: func() any { return &blockingCall{done: make(chan struct{}, 2)} }}

// doBlocking makes fs, calls on the blocking communicators cs, whose locks
// the caller holds, and waits for them within timeout. n and derr are
// ncclabi.Backend.Do's. Past timeout it returns an error wrapping
// ErrTimeout (call names what was called, for it): cs are closed then, and
// aborted, with any communicator a split of fs made, once NCCL returns;
// fs is NCCL's until then.
func (l *Library) doBlocking(fs []ncclabi.Frame, cs []*Comm, timeout time.Duration, call func() string) (n int, derr, late error) {
	bc := calls.Get().(*blockingCall)
	bc.l, bc.fs, bc.deadline = l, fs, time.Now().Add(timeout)
	bc.state.Store(callRunning)
	l.calls.start(bc) <- bc
	<-bc.done
	expired := l.calls.remove(bc)
	if bc.state.Load() == callDone {
		n, derr = bc.n, bc.derr
		if !expired {
			*bc = blockingCall{done: bc.done, left: bc.left[:0]}
			calls.Put(bc)
		}
		return n, derr, nil
	}
	for _, c := range cs {
		bc.left = append(bc.left, ncclabi.Frame{Call: ncclabi.CommAbort, Device: c.device, Comm: c.raw})
	}
	bc.aborted = make(chan struct{})
	if !bc.state.CompareAndSwap(callRunning, callAbandoned) {
		return bc.n, bc.derr, nil
	}
	for _, c := range cs {
		c.raw, c.left = 0, bc.aborted
	}
	return 0, nil, fmt.Errorf("%w: %s had not returned after %v (a blocking communicator's call waits for its peers where NCCL connects them, and NCCL cannot stop it from outside): left running, %s closed, to be aborted once NCCL returns",
		ErrTimeout, call(), timeout, commNames(cs))
}

// do makes fs, calls on c, whose lock the caller holds, in c's mode: on
// the caller's goroutine for a non-blocking communicator, through
// doBlocking for a blocking one. Its error is Library.do's, or doBlocking's
// past the bound.
func (c *Comm) do(fs []ncclabi.Frame, call string) error {
	if !c.inline {
		return c.l.do(fs, call, c)
	}
	n, derr, late := c.l.doBlocking(fs, []*Comm{c}, c.timeout, func() string { return call })
	if late != nil {
		return late
	}
	return c.l.outcome(fs, n, derr, call, c)
}

// commNames names cs, for messages.
func commNames(cs []*Comm) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// run makes the call and reports whether it returned in time, its
// results set for the caller, who is yet to be signalled. Given up on, it
// aborts the communicators its caller left, and the ones a split made,
// which it alone knows of.
func (bc *blockingCall) run() (done bool) {
	bc.n, bc.derr = bc.l.be.Do(bc.fs)
	if bc.state.CompareAndSwap(callRunning, callDone) {
		return true
	}
	fs := bc.left
	for _, f := range bc.fs {
		if f.Call == ncclabi.CommSplit && f.Out != 0 {
			fs = append(fs, ncclabi.Frame{Call: ncclabi.CommAbort, Device: f.Device, Comm: uintptr(f.Out)})
		}
	}
	for i := range fs {
		// Each alone: Do stops at a failure.
		_, _ = bc.l.be.Do(fs[i : i+1])
	}
	close(bc.aborted)
	return false
}

// blockingCalls are a Library's blocking calls in flight, its workers,
// which make them (a goroutine's stack grows in NCCL's calls: a new one
// for each call would grow it each time), and the watcher of their
// deadlines (a call's own timer would cost each call a timer's setting
// and stopping). The watcher and the idle workers run while calls are
// made, and end once none has been in flight for watchLinger, at most
// 2·watchLinger after the last call's deadline: the watcher sleeps until
// the earliest deadline it saw, since waking it at each call's end would
// cost the call.
type blockingCalls struct {
	mu      sync.Mutex // guards what follows and the calls' links
	head    *blockingCall
	idle    []chan *blockingCall // the idle workers' jobs
	running bool                 // the watcher runs
	wakeAt  time.Time            // when it wakes next, while it runs
	kick    chan struct{}
}

// start puts bc in flight and returns the jobs of a worker to give it to.
func (d *blockingCalls) start(bc *blockingCall) chan<- *blockingCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	bc.next = d.head
	if d.head != nil {
		d.head.prev = bc
	}
	d.head = bc
	switch {
	case !d.running:
		d.running = true
		if d.kick == nil {
			d.kick = make(chan struct{}, 1)
		}
		go d.watch()
	case bc.deadline.Before(d.wakeAt):
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	if n := len(d.idle); n > 0 {
		jobs := d.idle[n-1]
		d.idle = d.idle[:n-1]
		return jobs
	}
	jobs := make(chan *blockingCall, 1)
	go d.work(jobs)
	return jobs
}

// remove takes bc out of flight, and reports whether the watcher
// signalled it.
func (d *blockingCalls) remove(bc *blockingCall) (expired bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bc.prev != nil {
		bc.prev.next = bc.next
	} else {
		d.head = bc.next
	}
	if bc.next != nil {
		bc.next.prev = bc.prev
	}
	bc.prev, bc.next = nil, nil
	return bc.expired
}

// work makes the calls given on jobs, until a nil one. It is idle again
// before it signals its caller, so that the caller's next call takes it
// rather than starting another worker.
func (d *blockingCalls) work(jobs chan *blockingCall) {
	for bc := <-jobs; bc != nil; bc = <-jobs {
		done := bc.run()
		d.mu.Lock()
		running := d.running
		if running {
			d.idle = append(d.idle, jobs)
		}
		d.mu.Unlock()
		if done {
			bc.done <- struct{}{}
		}
		if !running {
			return
		}
	}
}

// watchLinger is how long the watcher and the idle workers wait for a
// call once none is in flight before they end: a program making blocking
// calls one after the other starts them once.
const watchLinger = time.Second

// watch signals the calls past their deadline, sleeping until the
// earliest of the others', and ends, with the idle workers, once none has
// been in flight for watchLinger.
func (d *blockingCalls) watch() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	idle := false
	for {
		d.mu.Lock()
		now := time.Now()
		var next time.Time
		for bc := d.head; bc != nil; bc = bc.next {
			switch {
			case bc.expired:
			case !now.Before(bc.deadline):
				bc.expired = true
				bc.done <- struct{}{}
			case next.IsZero() || bc.deadline.Before(next):
				next = bc.deadline
			}
		}
		switch {
		case !next.IsZero():
			idle = false
		case idle:
			d.running = false
			for _, jobs := range d.idle {
				jobs <- nil
			}
			d.idle = nil
			d.mu.Unlock()
			return
		default:
			idle = true
			next = now.Add(watchLinger)
		}
		d.wakeAt = next
		d.mu.Unlock()
		t.Reset(next.Sub(now))
		select {
		case <-t.C:
		case <-d.kick:
		}
	}
}

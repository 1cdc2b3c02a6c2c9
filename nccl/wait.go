package nccl

import (
	"fmt"
	"sync"
	"time"

	"github.com/cudapool/cudapool/cudart"
)

// Queued is a stream with the communicator whose operations were queued
// on it, for Wait.
type Queued struct {
	Comm   *Comm
	Stream cudart.Stream // on the communicator's device
}

// Wait waits for the work queued on every stream of qs, polling each
// (cudaStreamQuery) and, while it is not done, its communicator
// (ncclCommGetAsyncError): never a synchronisation, which waits for ever
// on a GPU when a peer died with its part of a collective unposted (the
// collective's kernel spins, and NCCL may report no error: over NVLink
// nothing tells it the peer is gone). It returns nil once every stream is
// done. An error of a communicator, or work not done after timeout, aborts
// every communicator of qs (Abort, which stops their kernels) and returns
// the error, wrapping ErrTimeout for the bound. It returns within timeout +
// AbortWait, and a millisecond's polling.
//
// rt is the runtime the streams are of. On the fake, as on a GPU, the
// queries let the work progress: Wait returns nil once every rank's part of
// each collective is queued (a captured one: once every rank's graph is
// launched), and times out while a peer's is not.
func (l *Library) Wait(rt cudart.Streams, timeout time.Duration, qs ...Queued) error {
	for i, q := range qs {
		if q.Comm == nil || q.Comm.l != l {
			return fmt.Errorf("%w: stream %d of %d has no communicator of this library", ErrInvalidOption, i+1, len(qs))
		}
	}
	if timeout <= 0 {
		return fmt.Errorf("%w: timeout %v: want a positive duration", ErrInvalidOption, timeout)
	}
	deadline := time.Now().Add(timeout)
	pace := newPacer()
	for {
		done := true
		for _, q := range qs {
			ok, err := rt.StreamQuery(q.Comm.device, q.Stream)
			if err != nil {
				abortAll(qs)
				return fmt.Errorf("nccl: waiting for stream 0x%x of %s: %w", uintptr(q.Stream), q.Comm, err)
			}
			if ok {
				continue
			}
			done = false
			if err := q.Comm.AsyncError(); err != nil {
				abortAll(qs)
				return fmt.Errorf("nccl: waiting for stream 0x%x of %s: %w; communicators aborted", uintptr(q.Stream), q.Comm, err)
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: streams of %s not done after %v (a peer gone, or hung?); communicators aborted%s", ErrTimeout, names(qs), timeout, abortAll(qs))
		}
		pace.pause()
	}
}

// abortAll aborts the communicators of qs at once, and says what did not
// end within AbortWait, for a message.
func abortAll(qs []Queued) string {
	var mu sync.Mutex
	var slow string
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.Comm.Abort(); err != nil {
				mu.Lock()
				slow += "; " + err.Error()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return slow
}

func names(qs []Queued) string {
	var s string
	for i, q := range qs {
		if i > 0 {
			s += ", "
		}
		s += q.Comm.String()
	}
	return s
}

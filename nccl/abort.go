package nccl

import (
	"fmt"
	"sync"
	"time"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

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

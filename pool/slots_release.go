package pool

import "fmt"

// Release gives the slot back, without waiting. Its stream may still have
// work queued: the slot goes to the next Acquire only once that work has
// finished. Release asks CUDA once (cudaStreamQuery): a slot whose work is
// done, as after the request's own wait for its output, goes straight to
// the first waiting Acquire; one with work still queued is handed on by a
// goroutine of the Slots that waits for its stream, off every request's
// path, or taken by an Acquire that finds the work done. Release of a Slot
// already released is ErrSlotReleased, of one these Slots did not hand out
// ErrForeignSlot, after Close ErrClosed. After a reset of the device,
// which destroyed the stream and ended its work, Release asks CUDA nothing
// and returns nil. If CUDA cannot answer, the slot is
// given back all the same, to be handed out after its stream is
// synchronised, and the error is returned.
func (s *Slots) Release(sl Slot) error {
	if err := s.valid(); err != nil {
		return err
	}
	d := sl.s
	if d == nil || d.owner != s {
		return fmt.Errorf("%w: release of %s", ErrForeignSlot, sl.label())
	}
	if s.closedFlag.Load() {
		return fmt.Errorf("%w: release of slot %d", ErrClosed, d.index)
	}
	if !d.gen.CompareAndSwap(sl.gen, sl.gen+1) {
		return fmt.Errorf("%w: slot %d", ErrSlotReleased, d.index)
	}
	// On the slot's own flag rather than a count shared by every Release:
	// Close stores closedFlag, then reads each slot's releasing.
	d.releasing.Store(true)
	if s.closedFlag.Load() {
		s.abandonRelease(d)
		return fmt.Errorf("%w: release of slot %d", ErrClosed, d.index)
	}
	return s.giveBack(d)
}

// abandonRelease ends the Release of d that saw the Slots close, leaving d
// held, as a Release after Close does.
func (s *Slots) abandonRelease(d *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.releasing.Store(false)
	s.settled.Broadcast()
}

// giveBack asks whether released slot d's stream is idle, then hands d on
// or queues it to drain, in Release's one locked section: until then d
// counts in use. A panic in the runtime queues it to drain.
func (s *Slots) giveBack(d *slot) (err error) {
	idle, reset := false, s.p.reset.Reset()
	defer func() { s.released(d, idle, reset).wake() }()
	if reset {
		// The reset destroyed the stream and ended its work.
		idle = true
		return nil
	}
	idle, err = s.sm.StreamQuery(s.dev, d.stream)
	if err != nil {
		idle = false
		return fmt.Errorf("pool: ask whether slot %d's work has finished at release (the slot was given back, to be synchronised before reuse): %w", d.index, err)
	}
	return nil
}

// released is giveBack's part under s.mu: it hands d on if its stream is
// idle, or queues it to drain. It returns the waiter handed d, to be woken
// once s.mu is let go.
func (s *Slots) released(d *slot, idle, reset bool) *waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endRelease(d)
	if idle {
		return s.give(d, reset)
	}
	s.draining.push(d)
	s.wakeIfWaiting()
	return nil
}

// endRelease ends the Release of d: it frees d of its holder and of the
// waiter it was handed to, and tells a Close waiting for it. The caller
// holds s.mu.
func (s *Slots) endRelease(d *slot) {
	s.unassign(d)
	if w := d.handedTo; w != nil {
		d.handedTo = nil
		s.recycle(w)
	}
	d.releasing.Store(false)
	if s.closed {
		s.settled.Broadcast()
	}
}

// drain runs until Close: while calls wait for a slot, it waits on the host
// for the oldest release to finish, off every request's path, and hands the
// slot to the first of them.
func (s *Slots) drain() {
	defer close(s.stopped)
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		for s.settleOne() {
		}
	}
}

// settleOne waits for the oldest released slot when a call waits for one,
// and reports whether it did. A slot whose wait fails stays queued, and the
// first waiter gets the error.
func (s *Slots) settleOne() bool {
	s.mu.Lock()
	if s.closed || len(s.waiters) == 0 || s.draining.n == 0 {
		s.mu.Unlock()
		return false
	}
	d := s.draining.pop()
	s.asking++
	s.mu.Unlock()
	var err error
	reset := s.p.reset.Reset()
	if !reset {
		err = wrapf(s.sm.StreamSynchronize(s.dev, d.stream), "pool: wait for slot %d's released work", d.index)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doneAsking()
	if err != nil {
		s.draining.pushFront(d)
		if w := s.first(); w != nil && w.hand(nil, err) {
			w.wake()
		}
		return true
	}
	// Off every request's path: woken under the lock.
	s.give(d, reset).wake()
	return true
}

// ring is a FIFO of at most len(buf) slots.
type ring struct {
	buf     []*slot
	head, n int
}

func (r *ring) push(sl *slot) {
	r.buf[(r.head+r.n)%len(r.buf)] = sl
	r.n++
}

func (r *ring) pushFront(sl *slot) {
	r.head = (r.head + len(r.buf) - 1) % len(r.buf)
	r.buf[r.head] = sl
	r.n++
}

func (r *ring) pop() *slot {
	sl := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return sl
}

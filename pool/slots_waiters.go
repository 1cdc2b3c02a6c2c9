package pool

import (
	"context"
	"slices"
)

// waiter is one Acquire waiting for a slot.
type waiter struct {
	prof *planned      // what the slot is for
	ch   chan struct{} // receives once, when done is set
	done bool          // handed a slot or an error; guarded by Slots.mu
	slot *slot
	err  error
	// anyOf is the MultiSlots Acquire this waiter is one device's part
	// of, nil for an Acquire of the Slots: only the part that claims it
	// is handed anything, and it wakes the any-device waiter.
	anyOf *anyWaiter
	// group is the MultiSlots AcquireGroup this waiter is one device's
	// part of: it takes only the slot of the index its group is bound
	// to, and the part that settles the group wakes it.
	group *groupWaiter
}

// woken waits for ch to receive, as every Acquire waits for its waiter to
// be woken, and says whether it did; false means ctx was done first, and ch
// may yet receive. A ctx that is never done costs no select.
func woken(ctx context.Context, ch <-chan struct{}) bool {
	done := ctx.Done()
	if done == nil {
		<-ch
		return true
	}
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// claim says whether w may be handed an outcome: always, unless it is part
// of an any-device waiter that another part, or a cancellation, has
// claimed, or of a group waiter that is no longer waiting. The caller holds
// Slots.mu.
func (w *waiter) claim() bool {
	switch {
	case w.anyOf != nil:
		return w.anyOf.won.CompareAndSwap(nil, w)
	case w.group != nil:
		return w.group.end.Load() == nil
	}
	return true
}

// accepts says whether w takes sl (a part of a group waiter binds its
// group to sl's index if it may), and whether w is to stay queued if not.
// The caller holds Slots.mu.
func (w *waiter) accepts(sl *slot) (take, keep bool) {
	if w.group != nil {
		return w.group.wants(sl.index)
	}
	return w.claim(), false
}

// finish hands w its outcome and wakes it, if w claims it. The caller
// holds Slots.mu.
func (w *waiter) finish(sl *slot, err error) {
	if w.claim() && w.hand(sl, err) {
		w.wake()
	}
}

// hand gives w its outcome, and says whether w is to be woken: always,
// unless w is the part of a group waiter that this outcome does not
// settle (it waits for the other devices' slots). The caller holds
// Slots.mu.
func (w *waiter) hand(sl *slot, err error) bool {
	w.slot, w.err, w.done = sl, err, true
	return w.group == nil || w.group.handed(w)
}

// wake tells w that it has its outcome, once; a nil w is no one to wake.
func (w *waiter) wake() {
	switch {
	case w == nil:
	case w.anyOf != nil:
		w.anyOf.ch <- struct{}{}
	case w.group != nil:
		w.group.ch <- struct{}{}
	default:
		w.ch <- struct{}{}
	}
}

// first takes the first waiter that claims its outcome off the queue,
// dropping the parts of any-device or group waiters no longer waiting
// there (their owner recycles them), or returns nil. The caller holds
// s.mu.
func (s *Slots) first() *waiter {
	for len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = slices.Delete(s.waiters, 0, 1)
		if w.claim() {
			return w
		}
	}
	return nil
}

// firstFor takes the first waiter that accepts sl off the queue, as first
// does, but passing over the parts of group waiters bound to another
// index, which stay queued. The caller holds s.mu.
func (s *Slots) firstFor(sl *slot) *waiter {
	for i := 0; i < len(s.waiters); {
		w := s.waiters[i]
		take, keep := w.accepts(sl)
		if keep && !take {
			i++
			continue
		}
		s.waiters = slices.Delete(s.waiters, i, i+1)
		if take {
			return w
		}
	}
	return nil
}

// newWaiter reuses a finished waiter when there is one. The caller holds
// s.mu.
func (s *Slots) newWaiter() *waiter {
	if w, ok := pop(&s.spare); ok {
		return w
	}
	return &waiter{ch: make(chan struct{}, 1)}
}

// recycle empties w, whose channel is empty, and keeps it for the next
// wait. The caller holds s.mu.
func (s *Slots) recycle(w *waiter) {
	w.prof, w.slot, w.err, w.done, w.anyOf, w.group = nil, nil, nil, false, nil, nil
	s.spare = append(s.spare, w)
}

// queue adds a waiter for pr, and wakes the drainer if a released slot may
// serve it. The caller holds s.mu.
func (s *Slots) queue(pr *planned) *waiter {
	w := s.newWaiter()
	w.prof = pr
	s.waiters = append(s.waiters, w)
	s.wakeIfWaiting()
	return w
}

// give hands a slot whose work has finished to the first waiter that
// accepts it, counted held and acquired from then on, or makes it ready:
// so a ready slot is one no waiter queued takes. It returns that waiter
// when it is to be woken, for the caller to wake once it has let go of
// s.mu, so that the woken goroutine is not made runnable under the lock.
// Once the device was reset, as the caller saw last, no Acquire returns a
// slot: the slot is made ready and every waiter is told, as an Acquire
// called then would be. The caller holds s.mu.
func (s *Slots) give(sl *slot, reset bool) *waiter {
	if reset {
		for _, w := range s.waiters {
			w.finish(nil, nil)
		}
		s.waiters = s.waiters[:0]
	}
	if w := s.firstFor(sl); w != nil {
		s.hold(sl, w.prof)
		sl.waits++
		w.prof.waits++
		sl.handedTo = w
		if w.hand(sl, nil) {
			return w
		}
		return nil
	}
	s.ready = append(s.ready, sl)
	return nil
}

// wakeIfWaiting tells the drainer that a waiter needs a released slot. The
// caller holds s.mu.
func (s *Slots) wakeIfWaiting() {
	if len(s.waiters) == 0 || s.draining.n == 0 {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

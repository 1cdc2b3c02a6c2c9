package pool

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Acquire returns a free slot laid out for profile, of whichever device
// has one: it looks at each device once, starting one further along at
// each call, so that requests spread over the devices. When none is free it
// waits, behind the calls already waiting, on every device at once, and
// takes the first slot any of them frees; a call of a device's own
// Slots.Acquire queues with them. Its errors are Slots.Acquire's; once a
// device was reset, Acquire fails with ErrDeviceReset (naming the device)
// until Close. The Slot must be given back with Release.
func (m *MultiSlots) Acquire(ctx context.Context, profile string) (Slot, error) {
	if m == nil || len(m.per) == 0 {
		return Slot{}, fmt.Errorf("%w: the slots were not created by NewMultiSlots", ErrClosed)
	}
	if _, ok := m.per[0].byName[profile]; !ok {
		return Slot{}, m.per[0].unknownProfile(profile)
	}
	if err := ctx.Err(); err != nil {
		return Slot{}, fmt.Errorf("pool: acquire a slot for profile %q: %w", profile, err)
	}
	start := int(m.next.Add(1) % uint32(len(m.per)))
	for i := range m.per {
		if sl, ok, err := m.per[(start+i)%len(m.per)].tryReady(profile); ok {
			return sl, err
		}
	}
	return m.wait(ctx, profile, start)
}

// tryReady holds a ready slot for profile, when one is: no call waiting
// before this one takes it (give); the error is handOut's.
func (s *Slots) tryReady(profile string) (Slot, bool, error) {
	pr := s.byName[profile]
	s.mu.Lock()
	var sl *slot
	if !s.closed && !s.p.reset.Reset() {
		sl = s.takeReady(pr)
	}
	s.mu.Unlock()
	if sl == nil {
		return Slot{}, false, nil
	}
	out, err := s.handOut(sl, pr)
	return out, true, err
}

// wait queues an any-device waiter on every device, starting at start,
// and waits for the first slot handed to it.
func (m *MultiSlots) wait(ctx context.Context, profile string, start int) (Slot, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Slot{}, fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, profile)
	}
	gw := m.newAnyWaiter()
	var err error
	for i := range m.per {
		s := m.per[(start+i)%len(m.per)]
		var next *waiter
		next, err = s.enlist(s.byName[profile], gw)
		next.wake()
		if err != nil || gw.won.Load() != nil {
			break
		}
	}
	m.mu.Unlock()
	begun := time.Now()
	if err != nil && gw.won.CompareAndSwap(nil, cancelled) {
		m.done(gw)
		return Slot{}, err
	}
	if !woken(ctx, gw.ch) {
		if gw.won.CompareAndSwap(nil, cancelled) {
			m.done(gw)
			return Slot{}, fmt.Errorf("pool: acquire a slot for profile %q: %w", profile, ctx.Err())
		}
		// Handed something as the context ended: taken all the same.
		<-gw.ch
	}
	w := gw.won.Load()
	s := gw.at[slices.Index(gw.subs, w)]
	m.done(gw)
	if sl := w.slot; sl != nil && !s.closedFlag.Load() {
		waited := int64(time.Since(begun))
		sl.waited.Add(waited)
		w.prof.waited.Add(waited)
		return s.handOut(sl, w.prof)
	}
	_, err = s.waitEnded(w.prof, w, nil)
	return Slot{}, err
}

// enlist queues gw's part in s's queue, and hands a ready slot to the first
// waiter (gw's part, or one queued before it), returned to be woken.
func (s *Slots) enlist(pr *planned, gw *anyWaiter) (*waiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
	case s.p.reset.Reset():
		return nil, s.resetError(pr)
	}
	w := s.queue(pr)
	w.anyOf = gw
	gw.subs = append(gw.subs, w)
	gw.at = append(gw.at, s)
	if sl, ok := pop(&s.ready); ok {
		return s.give(sl, false), nil
	}
	return nil, nil
}

// newAnyWaiter reuses a finished any-device waiter when there is one, and
// counts it waiting. The caller holds m.mu.
func (m *MultiSlots) newAnyWaiter() *anyWaiter {
	m.waiting++
	if gw, ok := pop(&m.spare); ok {
		return gw
	}
	return &anyWaiter{ch: make(chan struct{}, 1), subs: make([]*waiter, 0, len(m.per)), at: make([]*Slots, 0, len(m.per))}
}

// done takes gw's parts that were handed nothing off their queues and
// recycles them, then gw. The part that won, if any, is its Slots' until
// the slot's Release, or waitEnded's.
func (m *MultiSlots) done(gw *anyWaiter) {
	won := gw.won.Load()
	for i, w := range gw.subs {
		if w == won {
			continue
		}
		s := gw.at[i]
		s.mu.Lock()
		s.waiters = slices.DeleteFunc(s.waiters, func(x *waiter) bool { return x == w })
		s.recycle(w)
		s.mu.Unlock()
	}
	clear(gw.subs)
	clear(gw.at)
	gw.subs, gw.at = gw.subs[:0], gw.at[:0]
	gw.won.Store(nil)
	m.mu.Lock()
	m.waiting--
	m.spare = append(m.spare, gw)
	m.mu.Unlock()
}

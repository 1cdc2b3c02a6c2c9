package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// AcquireGroup returns slot k of every device, laid out for profile: the
// group of one index, whichever index is free on every device first. The
// slots of one index are what a request spread over the devices runs on
// (a tensor-parallel one): a communicator of each slot index, attached by
// index (nccl's ForSlots), has its ranks in the slots of one group, lent
// to the request as on any slot (Attached on each member).
//
// When an index is free on every device, and reserved by no other
// AcquireGroup, it takes it at once, without waiting. Otherwise it waits,
// and reserves one index: the one whose slots are the most free, which it
// takes, or, when none is free, the index of the first slot freed on any
// device that no other call takes first. From then on it takes slot k of
// each device as it is freed, before every call that came after it; the
// other slots of the device go to those calls meanwhile, so a group's wait
// holds back no request that does not need its slots. An index is reserved
// by one AcquireGroup at a time, so two never hold parts of one group each
// and wait for the other's. On each device the calls waiting are served in
// the order they came among those that take the slot freed: an Acquire
// that waits before an AcquireGroup takes a slot k freed before it, one
// that comes after it waits behind it. As long as every slot is released,
// every call is served. The slots it holds while it waits count in use
// (Stats).
//
// Its errors are Acquire's: the context's (wrapped), ErrClosed,
// ErrUnknownProfile, ErrDeviceReset (naming the device), a *cudart.Error
// when CUDA cannot say whether a slot's released work has finished, and the
// memory tool's refusal. When it returns an error it holds no slot and has
// lost none. The group must be given back with its Release.
//
// # Caveats
//
// A goroutine that holds a slot of these MultiSlots and calls
// AcquireGroup may wait for ever: the slot it holds may be one its group
// needs. Release a group whole (SlotGroup.Release): a member given back on
// its own (MultiSlots.Release) is free for any call, and the group's
// Release reports ErrSlotReleased for it.
func (m *MultiSlots) AcquireGroup(ctx context.Context, profile string) (SlotGroup, error) {
	if m == nil || len(m.per) == 0 {
		return SlotGroup{}, fmt.Errorf("%w: the slots were not created by NewMultiSlots", ErrClosed)
	}
	pr, ok := m.per[0].byName[profile]
	if !ok {
		return SlotGroup{}, m.per[0].unknownProfile(profile)
	}
	if err := ctx.Err(); err != nil {
		return SlotGroup{}, fmt.Errorf("pool: acquire a slot group for profile %q: %w", profile, err)
	}
	k, g, err := m.enlistGroup(pr.index)
	if err != nil {
		return SlotGroup{}, err
	}
	if g != nil {
		if k, err = m.waitGroup(ctx, g, pr); err != nil {
			return SlotGroup{}, err
		}
	}
	return m.handOutGroup(k, pr.index)
}

// groupWaiter is one AcquireGroup waiting for the slots of one index: a
// part in the queue of each device whose slot it has not taken, and the
// index once it is bound to one.
type groupWaiter struct {
	m *MultiSlots
	// end is nil while it waits; then completed, once every part has its
	// slot; cancelled, once the AcquireGroup gave up; or the part handed
	// an error, or told of a reset. It is set under m.bind, as the group
	// lets its index go (settle), and read without it.
	end   atomic.Pointer[waiter]
	left  atomic.Int32 // parts still waiting for their slot
	index int          // the index it is bound to, -1 before; guarded by m.bind
	ch    chan struct{}
	parts []*waiter // by position: the part queued there, nil where it took the slot at once
	took  []*slot   // by position: the slot it took at once
}

// completed marks a group waiter every part of which has its slot.
var completed = new(waiter)

// wants says whether g takes slot index k, binding itself to k when it is
// bound to no index and k to no group, and whether g waits still. The
// caller holds a Slots' mu.
func (g *groupWaiter) wants(k int) (take, waiting bool) {
	m := g.m
	m.bind.Lock()
	defer m.bind.Unlock()
	if g.end.Load() != nil {
		return false, false
	}
	if g.index < 0 && m.groups[k].bound == nil {
		g.index, m.groups[k].bound = k, g
	}
	return g.index == k, true
}

// handed counts the outcome handed to part w, and says whether it settles
// g: its last slot, or the first error. The caller holds w's Slots' mu.
func (g *groupWaiter) handed(w *waiter) bool {
	if w.slot == nil {
		return g.settle(w)
	}
	return g.left.Add(-1) == 0 && g.settle(completed)
}

// settle ends g's wait with end, unless it has ended, and lets its index
// go in the same step: a slot of the index freed from then on goes to the
// calls that take it, another group among them, and the slots g holds it
// gives back (abandon) if it did not complete. It says whether it ended
// g's wait.
func (g *groupWaiter) settle(end *waiter) bool {
	m := g.m
	m.bind.Lock()
	defer m.bind.Unlock()
	if g.end.Load() != nil {
		return false
	}
	g.end.Store(end)
	if g.index >= 0 {
		m.groups[g.index].bound = nil
	}
	return true
}

// enlistGroup takes the slots of an index free on every device, and
// returns it, or queues a group waiter for profile pi on every device,
// bound to the index with the most slots free if any is, which it takes.
func (m *MultiSlots) enlistGroup(pi int) (int, *groupWaiter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := m.per[0].profiles[pi].name
	if m.closed {
		return 0, nil, fmt.Errorf("%w: acquire a slot group for profile %q", ErrClosed, name)
	}
	for _, s := range m.per {
		s.mu.Lock()
	}
	defer func() {
		for i := len(m.per) - 1; i >= 0; i-- {
			m.per[i].mu.Unlock()
		}
	}()
	for _, s := range m.per {
		switch {
		case s.closed:
			return 0, nil, fmt.Errorf("%w: acquire a slot group for profile %q", ErrClosed, name)
		case s.p.reset.Reset():
			return 0, nil, s.resetError(s.profiles[pi])
		}
	}
	m.bind.Lock()
	defer m.bind.Unlock()
	k, free := m.freest()
	if free == len(m.per) {
		for _, s := range m.per {
			s.hold(s.readySlot(k), s.profiles[pi])
		}
		return k, nil, nil
	}
	g := m.newGroupWaiter()
	if free > 0 {
		g.index, m.groups[k].bound = k, g
	}
	for i, s := range m.per {
		pr := s.profiles[pi]
		if free > 0 {
			if sl := s.readySlot(k); sl != nil {
				s.hold(sl, pr)
				g.took[i] = sl
				continue
			}
		}
		w := s.queue(pr)
		w.group = g
		g.parts[i] = w
	}
	g.left.Store(int32(len(m.per) - free))
	return 0, g, nil
}

// freest is the index that no group waiter is bound to with the most slots
// ready, the last made ready on the first device between equals, and how
// many it has ready (0, and index -1, for none). The caller holds m.mu,
// every Slots' mu and m.bind.
func (m *MultiSlots) freest() (k, free int) {
	k = -1
	for _, s := range m.per {
		for _, sl := range s.ready {
			if m.groups[sl.index].bound == nil {
				m.count[sl.index]++
			}
		}
	}
	for _, s := range m.per {
		for j := len(s.ready) - 1; j >= 0; j-- {
			i := s.ready[j].index
			if m.count[i] > free {
				k, free = i, m.count[i]
			}
			m.count[i] = 0
		}
	}
	return k, free
}

// readySlot takes slot index k out of the ready slots, or returns nil if it
// is not ready. The caller holds s.mu.
func (s *Slots) readySlot(k int) *slot {
	i := slices.IndexFunc(s.ready, func(sl *slot) bool { return sl.index == k })
	if i < 0 {
		return nil
	}
	sl := s.ready[i]
	s.ready = slices.Delete(s.ready, i, i+1)
	return sl
}

// newGroupWaiter reuses a finished group waiter when there is one, and
// counts it waiting. The caller holds m.mu.
func (m *MultiSlots) newGroupWaiter() *groupWaiter {
	m.waitingGroups++
	if g, ok := pop(&m.spareGroups); ok {
		return g
	}
	return &groupWaiter{m: m, index: -1, ch: make(chan struct{}, 1), parts: make([]*waiter, len(m.per)), took: make([]*slot, len(m.per))}
}

// waitGroup waits until g has the slot of its index on every device, and
// returns the index, or until ctx is done or a device tells it of an
// error, and then gives back what it took.
func (m *MultiSlots) waitGroup(ctx context.Context, g *groupWaiter, pr *planned) (int, error) {
	begun := time.Now()
	if !woken(ctx, g.ch) {
		if g.settle(cancelled) {
			m.abandon(g)
			return 0, fmt.Errorf("pool: acquire a slot group for profile %q: %w", pr.name, ctx.Err())
		}
		// Settled as the context ended: taken, or failed, all the same.
		<-g.ch
	}
	if end := g.end.Load(); end != completed {
		err := m.groupError(g, end, pr)
		m.abandon(g)
		return 0, err
	}
	// Settled: every part was handed its slot before the last one's count,
	// which happened before the wake, so they are read without a lock.
	waited := int64(time.Since(begun))
	for _, w := range g.parts {
		if w != nil {
			w.slot.waited.Add(waited)
			w.prof.waited.Add(waited)
		}
	}
	k := g.index
	// The parts handed a slot are their Slots' until its Release.
	m.recycleGroup(g)
	return k, nil
}

// groupError is why group waiter g ended with part end's outcome, an error
// or a reset: Acquire's error, naming the device.
func (m *MultiSlots) groupError(g *groupWaiter, end *waiter, pr *planned) error {
	s := m.per[slices.Index(g.parts, end)]
	switch {
	case end.err != nil:
		return fmt.Errorf("pool: acquire a slot group for profile %q: device %d: %w", pr.name, s.dev, end.err)
	case s.closedFlag.Load():
		return fmt.Errorf("%w: acquire a slot group for profile %q", ErrClosed, pr.name)
	}
	return s.resetError(pr)
}

// abandon gives back the slots g, settled and not completed, took or was
// handed, and takes its parts off the queues, device by device.
func (m *MultiSlots) abandon(g *groupWaiter) {
	for i, s := range m.per {
		s.leave(g.parts[i], g.took[i]).wake()
	}
	m.recycleGroup(g)
}

// leave gives back sl, taken at once, or the slot part w was handed, or
// takes w off the queue, and recycles w. It returns the waiter given the
// slot, to be woken.
func (s *Slots) leave(w *waiter, sl *slot) (next *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case sl != nil:
		next = s.unhold(sl, false)
	case w.slot != nil:
		next = s.unhold(w.slot, true)
	case !w.done:
		s.waiters = slices.DeleteFunc(s.waiters, func(x *waiter) bool { return x == w })
	}
	if w != nil {
		s.recycle(w)
	}
	return next
}

// recycleGroup empties g, which is bound to no index, on no queue and
// whose channel is empty, and keeps it for the next wait.
func (m *MultiSlots) recycleGroup(g *groupWaiter) {
	clear(g.parts)
	clear(g.took)
	g.index = -1
	g.end.Store(nil)
	m.mu.Lock()
	m.waitingGroups--
	m.spareGroups = append(m.spareGroups, g)
	m.mu.Unlock()
}

// handOutGroup hands out slot k of every device, held for profile pi, as a
// SlotGroup. If the memory tool refuses one, every slot is given back.
func (m *MultiSlots) handOutGroup(k, pi int) (SlotGroup, error) {
	ig := &m.groups[k]
	for i, s := range m.per {
		out, err := s.handOut(&s.slots[k], s.profiles[pi])
		if err != nil {
			// handOut gave back the slot it could not annotate.
			for j, o := range m.per {
				if j != i {
					sl := &o.slots[k]
					err = errors.Join(err, o.Release(Slot{s: sl, prof: o.profiles[pi], gen: sl.gen.Load()}))
				}
			}
			return SlotGroup{}, err
		}
		ig.gens[i].Store(out.gen)
	}
	return SlotGroup{g: ig, gen: ig.gen.Load(), prof: pi}, nil
}

package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Acquire returns a free slot laid out for profile, in O(1): the profile's
// offsets were planned by NewSlots. A slot is free once the work queued on
// its stream before its last Release has finished: Release hands on the
// slots whose work is done, and Acquire asks CUDA once, without waiting,
// about the oldest of the others when no free slot is left. When no slot
// is free it waits, behind the calls already waiting (FIFO), until one is,
// the context is done, or the Slots close.
//
// When it returns an error no slot is taken, and none is lost. The errors:
//   - the context's, wrapped (errors.Is matches context.Canceled or
//     context.DeadlineExceeded);
//   - ErrClosed, from Close on, or on Slots NewSlots did not make;
//   - ErrUnknownProfile, for a profile NewSlots was not given;
//   - ErrDeviceReset, once the device was reset (cudaDeviceReset through
//     cudart): the slots' memory and streams are gone; Close them;
//   - a *cudart.Error, wrapped, when CUDA cannot say whether a released
//     slot's work has finished (cudaStreamQuery, or the cudaStreamSynchronize
//     of a slot drained for a waiter, failed): after a fault on the device,
//     which makes every later call fail too. The slot stays queued, to be
//     asked about again; an Acquire that waits gets the error of at most one
//     such failure, so it never waits on a device that cannot answer.
//
// The Slot must be given back with Release, whatever happens to the request:
// defer it.
func (s *Slots) Acquire(ctx context.Context, profile string) (Slot, error) {
	if err := s.valid(); err != nil {
		return Slot{}, err
	}
	pr, ok := s.byName[profile]
	if !ok {
		return Slot{}, s.unknownProfile(profile)
	}
	if err := ctx.Err(); err != nil {
		return Slot{}, fmt.Errorf("pool: acquire a slot for profile %q: %w", profile, err)
	}
	if s.p.reset.Reset() && !s.closedFlag.Load() {
		return Slot{}, s.resetError(pr)
	}
	sl, w, err := s.take(pr)
	if err != nil {
		return Slot{}, err
	}
	if w != nil {
		if sl, err = s.wait(ctx, pr, w); err != nil {
			return Slot{}, err
		}
	}
	return Slot{s: sl, prof: pr, gen: sl.gen.Load()}, nil
}

// resetError is Acquire's error once the device was reset.
func (s *Slots) resetError(pr *planned) error {
	return fmt.Errorf("%w: acquire a slot for profile %q: device %d was reset since NewSlots, which freed the slots' memory and destroyed their streams; Close the slots", ErrDeviceReset, pr.name, s.dev)
}

// take hands out a free slot, or the oldest released one if its stream
// turns out idle, or else queues a waiter. The lock is let go for the
// question to CUDA; the slot asked about is meanwhile in neither queue.
func (s *Slots) take(pr *planned) (*slot, *waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
	}
	if len(s.waiters) == 0 {
		if n := len(s.ready); n > 0 {
			sl := s.ready[n-1]
			s.ready = s.ready[:n-1]
			s.hold(sl, pr)
			s.mu.Unlock()
			return sl, nil, nil
		}
		if s.draining.n > 0 {
			// The oldest release is the likeliest to have finished.
			d := s.draining.pop()
			s.asking++
			s.mu.Unlock()
			return s.takeIfIdle(pr, d)
		}
	}
	w := s.queue(pr)
	s.mu.Unlock()
	return nil, w, nil
}

// takeIfIdle holds d for pr if its stream is idle; otherwise d goes back to
// the head of the draining queue and the caller waits. A panic in the
// runtime puts d back all the same.
func (s *Slots) takeIfIdle(pr *planned, d *slot) (sl *slot, w *waiter, err error) {
	idle, answered := false, false
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.doneAsking()
		if answered && idle && !s.closed {
			s.hold(d, pr)
			sl = d
			return
		}
		s.draining.pushFront(d)
		switch {
		case answered && s.closed:
			err = fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
		case answered && err == nil:
			w = s.queue(pr)
		default:
			s.wakeIfWaiting()
		}
	}()
	idle, err = s.sm.StreamQuery(s.dev, d.stream)
	answered = true
	if err != nil {
		err = fmt.Errorf("pool: ask whether slot %d's released work has finished: %w", d.index, err)
	}
	return nil, nil, err
}

// doneAsking counts one question to CUDA about a slot's stream answered, or
// abandoned by a panic. The caller holds s.mu.
func (s *Slots) doneAsking() {
	s.asking--
	if s.asking == 0 {
		s.settled.Broadcast()
	}
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

// hold counts sl as held with pr, and as one acquisition. The caller holds
// s.mu.
func (s *Slots) hold(sl *slot, pr *planned) {
	s.assign(sl, pr)
	sl.acquisitions++
	pr.acquisitions++
}

// assign marks sl held with pr: from the moment it is handed to a waiter,
// so that Stats count it in use. The caller holds s.mu.
func (s *Slots) assign(sl *slot, pr *planned) {
	sl.held = pr
	pr.inUse++
}

// unassign undoes assign. The caller holds s.mu.
func (s *Slots) unassign(sl *slot) {
	sl.held.inUse--
	sl.held = nil
}

// wait blocks until w is handed a slot, ctx is done or the Slots close. A
// slot handed over is already counted held and acquired by the giver, so
// that a woken call takes s.mu again only if its wait ended otherwise too.
func (s *Slots) wait(ctx context.Context, pr *planned, w *waiter) (*slot, error) {
	start := time.Since(s.born)
	var cancelled error
	if done := ctx.Done(); done == nil {
		<-w.ch
	} else {
		select {
		case <-w.ch:
		case <-done:
			cancelled = ctx.Err()
		}
	}
	if cancelled != nil {
		return s.waitEnded(pr, w, cancelled)
	}
	// Received: w is the slot's until its Release, which recycles it, and
	// no one writes it meanwhile.
	if sl := w.slot; sl != nil && !s.closedFlag.Load() {
		// The giver saw no reset of the device.
		waited := int64(time.Since(s.born) - start)
		sl.waited.Add(waited)
		pr.waited.Add(waited)
		return sl, nil
	}
	return s.waitEnded(pr, w, nil)
}

// waitEnded is wait's end when w got no slot, or one it cannot keep: its
// context was done or the Slots closed as the slot was handed over. A
// waiter handed nothing and no error was told of a reset of the device.
func (s *Slots) waitEnded(pr *planned, w *waiter, cancelled error) (*slot, error) {
	next, err := s.endWait(pr, w, cancelled)
	next.wake()
	return nil, err
}

// endWait is waitEnded's part under s.mu. It returns the waiter handed the
// slot w could not keep, to be woken once s.mu is let go.
func (s *Slots) endWait(pr *planned, w *waiter, cancelled error) (next *waiter, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := w.slot, w.err
	if sl != nil {
		// Not this call's: undo the giver's count of it.
		sl.handedTo = nil
		sl.acquisitions--
		sl.waits--
		pr.acquisitions--
		pr.waits--
		s.unassign(sl)
		if s.closed {
			s.ready = append(s.ready, sl)
		} else {
			next = s.give(sl, s.p.reset.Reset())
		}
	}
	switch {
	case cancelled != nil:
		if !w.done {
			s.waiters = slices.DeleteFunc(s.waiters, func(x *waiter) bool { return x == w })
		}
		err = fmt.Errorf("pool: acquire a slot for profile %q: %w", pr.name, cancelled)
	case err == nil && s.closed:
		err = fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
	case err == nil:
		err = s.resetError(pr)
	}
	if cancelled == nil || !w.done {
		// Its channel is empty and stays so. A cancelled waiter handed
		// something may yet be woken by its giver: it is left to the
		// garbage collector.
		s.recycle(w)
	}
	return next, err
}

// give hands a slot whose work has finished to the first waiter, counted
// held and acquired from then on, or makes it ready. It returns that
// waiter, for the caller to wake once it has let go of s.mu, so that the
// woken goroutine is not made runnable under the lock. Once the device was
// reset, as the caller saw last, no Acquire returns a slot: the slot is
// made ready and every waiter is told, as an Acquire called then would be.
// The caller holds s.mu.
func (s *Slots) give(sl *slot, reset bool) *waiter {
	if reset {
		for _, w := range s.waiters {
			w.finish(nil, nil)
		}
		s.waiters = s.waiters[:0]
	}
	if len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = slices.Delete(s.waiters, 0, 1)
		s.hold(sl, w.prof)
		sl.waits++
		w.prof.waits++
		sl.handedTo = w
		w.hand(sl, nil)
		return w
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
		if len(s.waiters) > 0 {
			w := s.waiters[0]
			s.waiters = slices.Delete(s.waiters, 0, 1)
			w.finish(nil, err)
		}
		return true
	}
	// Off every request's path: woken under the lock.
	s.give(d, reset).wake()
	return true
}

// unknownProfile says which profiles there are.
func (s *Slots) unknownProfile(name string) error {
	names := make([]string, len(s.profiles))
	for i, p := range s.profiles {
		names[i] = fmt.Sprintf("%q", p.name)
	}
	return fmt.Errorf("%w: %q; the slots have %s", ErrUnknownProfile, name, strings.Join(names, ", "))
}

// waiter is one Acquire waiting for a slot.
type waiter struct {
	prof *planned      // what the slot is for
	ch   chan struct{} // receives once, when done is set
	done bool          // handed a slot or an error; guarded by Slots.mu
	slot *slot
	err  error
}

// finish hands w its outcome and wakes it. The caller holds Slots.mu.
func (w *waiter) finish(sl *slot, err error) {
	w.hand(sl, err)
	w.wake()
}

// hand gives w its outcome, for a wake to come. The caller holds Slots.mu.
func (w *waiter) hand(sl *slot, err error) {
	w.slot, w.err, w.done = sl, err, true
}

// wake tells w that it has its outcome, once; a nil w is no one to wake.
func (w *waiter) wake() {
	if w != nil {
		w.ch <- struct{}{}
	}
}

// newWaiter reuses a finished waiter when there is one. The caller holds
// s.mu.
func (s *Slots) newWaiter() *waiter {
	if n := len(s.spare); n > 0 {
		w := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return w
	}
	return &waiter{ch: make(chan struct{}, 1)}
}

// recycle empties w, whose channel is empty, and keeps it for the next
// wait. The caller holds s.mu.
func (s *Slots) recycle(w *waiter) {
	w.prof, w.slot, w.err, w.done = nil, nil, nil, false
	s.spare = append(s.spare, w)
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
